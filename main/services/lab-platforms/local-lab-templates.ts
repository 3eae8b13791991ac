import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import type { OsValue } from '../../../shared/contract/pov';
import {
  createLocalTemplateArgs,
  localTemplateId,
  localTemplateVm,
  LOCAL_TEMPLATE_MAX_VMS,
  type CreateLocalTemplateArgs,
} from '../../../shared/contract/lab-templates';

/**
 * Local templates: a named set of images in the connected vm-manager with VM names, OS and sizes,
 * for POVs on the `local` lab platform. One JSON file per template, `<dir>/<id>.json`, written
 * atomically (temporary file, fsync, rename) and validated on every read: a file that does not
 * parse is skipped with a logged reason, never breaking the list. The bundled test template
 * (`povdesk-test`, the vm-manager's test image) is not a file; it always comes first.
 */

export interface LocalTemplateVm {
  name: string;
  image: string;
  os: OsValue;
  cpus: number;
  memoryMib: number;
  diskGib: number;
  requireAttestation: boolean;
}

export interface LocalTemplate {
  id: string;
  name: string;
  description: string | null;
  builtIn: boolean;
  vms: LocalTemplateVm[];
}

export const TEST_TEMPLATE_ID = 'povdesk-test';

/** One VM on the vm-manager's test image (TEST_IMAGE in main/vm-manager/images.ts) at the size its golden values are learned at. */
export const TEST_TEMPLATE: Readonly<LocalTemplate> = {
  id: TEST_TEMPLATE_ID,
  name: 'POV Desk test VM',
  description: "One small attested Linux VM on the vm-manager's test image, for rehearsing a POV on this laptop.",
  builtIn: true,
  vms: [{ name: 'test-vm', image: 'povdesk-test', os: 'linux', cpus: 2, memoryMib: 2048, diskGib: 20, requireAttestation: true }],
};

const templateFile = lazySchema(() =>
  z
    .object({
      version: z.literal(1),
      id: localTemplateId,
      name: z.string().trim().min(1).max(80),
      description: z.string().max(500).nullable(),
      createdAt: z.string(),
      vms: z.array(localTemplateVm).min(1).max(LOCAL_TEMPLATE_MAX_VMS),
    })
    .strict(),
);

export interface LocalTemplatesOptions {
  dir: string;
  /** where a skipped file's reason goes (the core's logger) */
  log?: { warn(message: string, fields?: Record<string, unknown>): void };
  now?: () => Date;
}

export class LocalLabTemplates {
  private readonly dir: string;
  private readonly log: NonNullable<LocalTemplatesOptions['log']>;
  private readonly now: () => Date;

  constructor(o: LocalTemplatesOptions) {
    this.dir = o.dir;
    this.log = o.log ?? { warn: (m, f) => console.warn(m, f ?? '') };
    this.now = o.now ?? (() => new Date());
  }

  /** The bundled test template first, then the user's by name. */
  list(): LocalTemplate[] {
    return [copy(TEST_TEMPLATE), ...this.readAll()];
  }

  get(id: string): LocalTemplate | null {
    if (id === TEST_TEMPLATE_ID) return copy(TEST_TEMPLATE);
    return this.readAll().find((t) => t.id === id) ?? null;
  }

  /** Validates, refuses a name already taken (any case), writes atomically. Throws before writing anything. */
  create(input: CreateLocalTemplateArgs): LocalTemplate {
    const a = parseLocalTemplateArgs(input);
    const existing = this.list();
    const taken = existing.find((t) => t.name.toLowerCase() === a.name.toLowerCase());
    if (taken) throw new AppError('conflict', `A local template named "${taken.name}" already exists; pick another name.`);
    const ids = new Set(existing.map((t) => t.id));
    let id = newId(a.name);
    while (ids.has(id)) id = newId(a.name);
    const file: z.infer<typeof templateFile> = {
      version: 1,
      id,
      name: a.name,
      description: a.description ? a.description : null,
      createdAt: this.now().toISOString(),
      vms: a.vms.map((v) => ({ ...v, requireAttestation: v.requireAttestation ?? false })),
    };
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeAtomic(join(this.dir, `${id}.json`), `${JSON.stringify(templateFile.parse(file), null, 2)}\n`);
    return toTemplate(file);
  }

  /** Removes a user's template; the built-in one and unknown ids are refused. */
  delete(id: string): void {
    this.requireUserTemplate(id, 'deleted');
    rmSync(join(this.dir, `${id}.json`), { force: true });
  }

  /** Refuses, before anything else is checked, what update would: the built-in template, an unknown or unsafe id. */
  checkUpdatable(id: string): void {
    this.requireUserTemplate(id, 'changed');
  }

  /**
   * Replaces a user's template under its id, keeping when it was made; a name another template
   * has (any case) is refused. Validates everything and throws before writing anything.
   */
  update(id: string, input: CreateLocalTemplateArgs): LocalTemplate {
    const a = parseLocalTemplateArgs(input);
    this.checkUpdatable(id);
    const taken = this.list().find((t) => t.id !== id && t.name.toLowerCase() === a.name.toLowerCase());
    if (taken) throw new AppError('conflict', `A local template named "${taken.name}" already exists; pick another name.`);
    const path = join(this.dir, `${id}.json`);
    const before = templateFile.parse(JSON.parse(readFileSync(path, 'utf8')));
    const file: z.infer<typeof templateFile> = {
      ...before,
      name: a.name,
      description: a.description ? a.description : null,
      vms: a.vms.map((v) => ({ ...v, requireAttestation: v.requireAttestation ?? false })),
    };
    writeAtomic(path, `${JSON.stringify(templateFile.parse(file), null, 2)}\n`);
    return toTemplate(file);
  }

  private requireUserTemplate(id: string, verb: 'deleted' | 'changed'): void {
    if (id === TEST_TEMPLATE_ID) throw new AppError('invalid_request', `The bundled test template is built in and cannot be ${verb}.`);
    if (!localTemplateId.safeParse(id).success || !this.readAll().some((t) => t.id === id)) {
      throw new AppError('not_found', `No local template with id "${id}".`);
    }
  }

  private readAll(): LocalTemplate[] {
    if (!existsSync(this.dir)) return [];
    const out: LocalTemplate[] = [];
    const names = new Set([TEST_TEMPLATE.name.toLowerCase()]);
    for (const entry of readdirSync(this.dir).sort()) {
      if (!entry.endsWith('.json')) continue;
      const path = join(this.dir, entry);
      const skip = (reason: string): void => this.log.warn('local template skipped', { file: path, reason });
      let raw: unknown;
      try {
        raw = JSON.parse(readFileSync(path, 'utf8'));
      } catch (e) {
        skip(`not JSON: ${(e as Error).message}`);
        continue;
      }
      const r = templateFile.safeParse(raw);
      if (!r.success) {
        const i = r.error.issues[0];
        skip(`${i?.path.join('.') || 'file'}: ${i?.message ?? 'invalid'}`);
        continue;
      }
      if (`${r.data.id}.json` !== entry) {
        skip(`its id "${r.data.id}" does not match the file name`);
        continue;
      }
      if (r.data.id === TEST_TEMPLATE_ID) {
        skip('the id of the bundled test template is reserved');
        continue;
      }
      if (new Set(r.data.vms.map((v) => v.name)).size !== r.data.vms.length) {
        skip('two VMs share a name');
        continue;
      }
      if (names.has(r.data.name.toLowerCase())) {
        skip(`another template is already named "${r.data.name}"`);
        continue;
      }
      names.add(r.data.name.toLowerCase());
      out.push(toTemplate(r.data));
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** The create arguments checked, or AppError('invalid_request') naming the first bad field. */
export function parseLocalTemplateArgs(input: CreateLocalTemplateArgs): z.output<typeof createLocalTemplateArgs> {
  const parsed = createLocalTemplateArgs.safeParse(input);
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0];
  const where = first?.path.length ? `${first.path.join('.')}: ` : '';
  throw new AppError('invalid_request', `Local template refused: ${where}${first?.message ?? 'invalid'}`);
}

function toTemplate(f: z.infer<typeof templateFile>): LocalTemplate {
  return { id: f.id, name: f.name, description: f.description, builtIn: false, vms: f.vms.map((v) => ({ ...v })) };
}

function copy(t: Readonly<LocalTemplate>): LocalTemplate {
  return { ...t, vms: t.vms.map((v) => ({ ...v })) };
}

/** A slug of the name (at most 32 characters) and 6 random hex digits: readable, unique, a safe file name. */
function newId(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32)
    .replace(/-+$/, '');
  const suffix = randomBytes(3).toString('hex');
  return slug ? `${slug}-${suffix}` : `template-${suffix}`;
}

function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
