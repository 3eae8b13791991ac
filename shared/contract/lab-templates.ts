import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { dnsLabel } from './bake';
import { osValue } from './pov';
import { lazyMethods, method } from './define';
import { LOCAL_TEMPLATE_MAX_VMS } from './values';

export { LOCAL_TEMPLATE_MAX_VMS };

/**
 * Local templates: a named set of images in the connected vm-manager, each with a VM name, OS and
 * size; `pov.create {platform:'local'}` makes one VM per entry. Stored as JSON files by
 * main/services/lab-platforms/local-lab-templates.ts; the bundled test template comes first. At most
 * LOCAL_TEMPLATE_MAX_VMS VMs (values.ts).
 */

/** Ids are safe file names and fit pov.create's templateId (letters, digits, - and _, at most 40). */
export const localTemplateId = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(40)
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a local template id: lower-case letters, digits and -'),
);
/** A VM's size: the bounds vm.create takes. */
export const localTemplateVm = lazySchema(() =>
  z.strictObject({
    /** short, so the POV's tag still fits in a DNS label before it */
    name: dnsLabel.max(30, 'at most 30 characters (the POV tag goes before it)'),
    image: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, 'an image name: printable characters, no spaces'),
    os: osValue,
    cpus: z.number().int().min(1).max(64),
    memoryMib: z.number().int().min(256).max(1_048_576),
    diskGib: z.number().int().min(1).max(4096),
    requireAttestation: z.boolean(),
  }),
);
const localTemplateFields = () => ({
  name: z
    .string()
    .trim()
    .min(1)
    .max(80)
    .regex(/^[^\x00-\x1f\x7f]+$/, 'no control characters'),
  description: z.string().trim().max(500).nullable().optional(),
  vms: z
    .array(localTemplateVm.extend({ requireAttestation: z.boolean().optional() }).strict())
    .min(1, 'a template needs at least one VM')
    .max(LOCAL_TEMPLATE_MAX_VMS, `at most ${LOCAL_TEMPLATE_MAX_VMS} VMs`)
    .refine((vms) => new Set(vms.map((v) => v.name)).size === vms.length, 'VM names must be unique within a template'),
});
export const createLocalTemplateArgs = lazySchema(() => z.strictObject(localTemplateFields()));
export type CreateLocalTemplateArgs = z.input<typeof createLocalTemplateArgs>;
/** The whole template again, under the id it keeps (POVs made from it keep their VMs). */
export const updateLocalTemplateArgs = lazySchema(() => z.strictObject({ id: localTemplateId, ...localTemplateFields() }));
export type UpdateLocalTemplateArgs = z.input<typeof updateLocalTemplateArgs>;

/** The lab platforms whose templates labTemplates.list shows. */
export const labTemplatePlatform = lazySchema(() => z.enum(['skytap', 'local']));
/** A template of either platform: Skytap's (image null, never built in) or a local one. */
export const labTemplateView = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    builtIn: z.boolean(),
    /** Skytap's list may carry no VMs: then []. The size fields are a local template's only. */
    vms: z.array(
      z.strictObject({
        name: z.string(),
        os: osValue,
        image: z.string().nullable(),
        cpus: z.number().int().optional(),
        memoryMib: z.number().int().optional(),
        diskGib: z.number().int().optional(),
        requireAttestation: z.boolean().optional(),
      }),
    ),
  }),
);
export type LabTemplateView = z.infer<typeof labTemplateView>;

export const labTemplatesMethods = lazyMethods({
  'labTemplates.list': () =>
    method(
      "A lab platform's templates: Skytap's catalogue (as skytap.listTemplates), or the local templates with the bundled test " +
        'template first',
      z.strictObject({ platform: labTemplatePlatform }),
      z.strictObject({ platform: labTemplatePlatform, templates: z.array(labTemplateView) }),
    ),
  'labTemplates.create': () =>
    method(
      'Save a local template: 1 to 8 VMs, each an image in the connected vm-manager with a name, OS and size; the name must be new',
      createLocalTemplateArgs,
      z.strictObject({ template: labTemplateView }),
    ),
  'labTemplates.update': () =>
    method(
      'Change a local template in place: its name, description and VMs, checked as on create; the id stays, the bundled test ' +
        'template cannot be changed, and POVs made from it keep their VMs',
      updateLocalTemplateArgs,
      z.strictObject({ template: labTemplateView }),
    ),
  'labTemplates.delete': () =>
    method(
      'Delete a local template (the bundled test template cannot be deleted); POVs made from it keep their VMs',
      z.strictObject({ id: localTemplateId }),
      z.strictObject({}),
    ),
});
