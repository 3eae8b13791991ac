import { AppError } from '../../../shared/contract/errors';
import type { CreateLocalTemplateArgs, LabTemplateView } from '../../../shared/contract/lab-templates';
import { inferOs, type Template } from '../skytap/schemas';
import { parseLocalTemplateArgs, type LocalTemplate, type LocalLabTemplates } from './local-lab-templates';

/**
 * labTemplates.list / create / update / delete: a lab platform's templates in one shape. Skytap's
 * come from its catalogue (what skytap.listTemplates reads); local ones from the LocalLabTemplates
 * store, whose images must exist in the vm-manager the app is connected to when one is saved.
 */
export interface LabTemplateServiceOptions {
  local: LocalLabTemplates;
  /** Skytap's catalogue, every page (the saved account or project) */
  skytapTemplates: () => Promise<Template[]>;
  /** The connected vm-manager's images (local or remote) */
  vmImages: () => Promise<{ name: string }[]>;
}

export class LabTemplateService {
  constructor(private readonly o: LabTemplateServiceOptions) {}

  async list(platform: 'skytap' | 'local'): Promise<LabTemplateView[]> {
    if (platform === 'local') return this.o.local.list().map(localView);
    return (await this.o.skytapTemplates()).map((t) => ({
      id: t.id,
      name: t.name,
      description: t.description ?? null,
      builtIn: false,
      vms: t.vms.map((v) => ({ name: v.name, os: inferOs(v), image: null })),
    }));
  }

  /** Every image must be in the connected vm-manager; nothing is written when one is not. */
  async create(input: CreateLocalTemplateArgs): Promise<LabTemplateView> {
    const args = parseLocalTemplateArgs(input);
    await this.checkImages(args);
    return localView(this.o.local.create(args));
  }

  /** As create, under the template's id; the built-in template and unknown ids are refused first. */
  async update(id: string, input: CreateLocalTemplateArgs): Promise<LabTemplateView> {
    const args = parseLocalTemplateArgs(input);
    this.o.local.checkUpdatable(id);
    await this.checkImages(args);
    return localView(this.o.local.update(id, args));
  }

  private async checkImages(args: CreateLocalTemplateArgs): Promise<void> {
    let images: { name: string }[];
    try {
      images = await this.o.vmImages();
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new AppError(
        'unavailable',
        `Cannot check the template's images: the vm-manager did not answer (${why}). Start it or fix the connection on the Local ` +
          `VMs page, then save again.`,
      );
    }
    const have = new Set(images.map((i) => i.name));
    const missing = args.vms.filter((v) => !have.has(v.image));
    if (missing.length) {
      const list = missing.map((v) => `"${v.image}" (VM ${v.name})`).join(', ');
      const there = images.length ? `it has ${[...have].sort().join(', ')}` : 'it has no images';
      throw new AppError('invalid_request', `The connected vm-manager has no image ${list}; ${there}. Bake or import the image first.`);
    }
  }

  delete(id: string): void {
    this.o.local.delete(id);
  }
}

function localView(t: LocalTemplate): LabTemplateView {
  return { id: t.id, name: t.name, description: t.description, builtIn: t.builtIn, vms: t.vms.map((v) => ({ ...v })) };
}
