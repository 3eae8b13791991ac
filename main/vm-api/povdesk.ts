/**
 * What POV Desk's own vm-manager takes beyond giantswarm's document (./schemas): the `povdesk`
 * extras of a create body (guest→host forwards), of a VM's answer (how its last reset went) and the
 * user-data route. A manager without them
 * (giantswarm's) answers the create with 400 (unknown field `povdesk`) and the route with 404.
 * Imported by the app (its client) and by the daemon; only zod, no node:*.
 */
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { createVmRequestSchema, vmSchema } from './schemas';

/**
 * The address inside every guest's network (169.254.169.0/24) at which a host forward is reached:
 * `http://GUEST_HOST_ALIAS:<guest_port>` in the guest is `127.0.0.1:<host_port>` on the manager's
 * host. Not the gateway (.2), slirp's DNS (.3), the guest (.15) or the metadata service (.254).
 */
export const GUEST_HOST_ALIAS = '169.254.169.100';

/** Forwards one VM may have (each is a guestfwd with its own connection slots). */
export const MAX_HOST_FORWARDS = 4;

/**
 * The longest user-data this manager stores: Skytap's user_data limit (16384 characters,
 * USER_DATA_LIMIT in main/services/control-node/markers.ts; a test checks they agree), so a
 * payload that fits here fits there.
 */
export const USER_DATA_MAX_CHARS = 16_384;

const port = (field: string) =>
  z
    .number({ error: `${field} must be a whole number` })
    .int(`${field} must be a whole number`)
    .min(1, `${field} must be 1 to 65535`)
    .max(65535, `${field} must be 1 to 65535`);

export const hostForwardSchema = lazySchema(() => z.strictObject({ guest_port: port('guest_port'), host_port: port('host_port') }));
export type HostForward = z.infer<typeof hostForwardSchema>;

/** The create body's `povdesk` object. */
export const povdeskCreateSchema = lazySchema(() =>
  z.strictObject({
    host_forwards: z
      .array(hostForwardSchema)
      .max(MAX_HOST_FORWARDS, `host_forwards: at most ${MAX_HOST_FORWARDS} per VM`)
      .refine((fs) => new Set(fs.map((f) => f.guest_port)).size === fs.length, 'host_forwards: each guest_port at most once')
      .optional(),
  }),
);

/** POST /vms as this daemon takes it: the document's CreateVMRequest plus the optional `povdesk` object. */
export const localCreateVmRequestSchema = lazySchema(() => createVmRequestSchema.extend({ povdesk: povdeskCreateSchema.optional() }));
export type LocalCreateVmRequest = z.infer<typeof localCreateVmRequestSchema>;

/** PUT /vms/{id}/povdesk/user-data: the user-data the metadata service serves from now on (null: none, 204). */
export const setUserDataSchema = lazySchema(() =>
  z.strictObject({
    user_data: z.string().max(USER_DATA_MAX_CHARS, `user_data: at most ${USER_DATA_MAX_CHARS} characters (Skytap's limit)`).nullable(),
  }),
);

/** PUT /networks/{name}/povdesk/internet: the network's Internet access (each VM follows it at its next start). */
export const setInternetSchema = lazySchema(() => z.strictObject({ internet: z.boolean() }));

/** How a VM's last reset to its clean state went (`note` says why it did not resume; null: it did). */
export const lastResetSchema = lazySchema(() => z.object({ at: z.string(), memory: z.boolean(), note: z.string().nullable() }));
export type LastReset = z.infer<typeof lastResetSchema>;

/**
 * A VM as this daemon answers it: the document's VM plus, in its `povdesk` extras, how the last
 * reset to the clean state went (resumed from the saved memory, or left to boot the saved disks and
 * why). The app reads only what it uses; the rest of the extras pass unread.
 */
export const localVmSchema = lazySchema(() =>
  vmSchema.extend({
    povdesk: z.object({ lastReset: lastResetSchema.nullable().optional() }).optional(),
  }),
);
export type LocalVm = z.infer<typeof localVmSchema>;
