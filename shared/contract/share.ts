import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { method, ok, lazyMethods } from './define';

const id = lazySchema(() => z.string().trim().min(1).max(200));
const skytapId = lazySchema(() =>
  z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be a Skytap id'),
);
/** An instant with its offset (ISO-8601), e.g. 2026-12-01T12:00:00Z. */
export const instant = lazySchema(() => z.iso.datetime({ offset: true }));

export const SHARE_ACCESS = ['use', 'run_and_use'] as const;

export const shareView = lazySchema(() =>
  z.strictObject({
    shareId: z.string(),
    name: z.string(),
    /** desktops_url: the link the customer opens. */
    url: z.string().nullable(),
    access: z.string().nullable(),
    vmIds: z.array(z.string()),
    expiresAt: z.string().nullable(),
    runtimeLimitMinutes: z.number().nullable(),
    runtimeLeftSeconds: z.number().nullable(),
    /** False for a portal created outside POV Desk ("not managed here": no password kept). */
    managed: z.boolean(),
    /** The keychain holds this link's password ("Show again" works). */
    passwordStored: z.boolean(),
    /** Skytap no longer has it (revoked here, or deleted outside). */
    goneAt: z.string().nullable(),
    createdAt: z.string(),
  }),
);
export type ShareView = z.infer<typeof shareView>;

const shareList = lazySchema(() =>
  z.strictObject({
    shares: z.array(shareView),
    autoDeleteAt: z.string().nullable(),
    /** Set when the customer may be suspended mid-demo (gateway-only access with suspend_on_idle). */
    idleWarning: z.string().nullable(),
  }),
);

export const shareMethods = lazyMethods({
  'share.create': () =>
    method(
      "Create one sharing portal (publish set) for the POV's environment, always with a generated password (returned once; kept " +
        'in the keychain) and an expiry no later than the auto-delete time',
      z.strictObject({
        povId: id,
        expiresAt: instant.optional(),
        vmIds: z.array(skytapId).min(1).max(200).optional(),
        access: z.enum(SHARE_ACCESS).optional(),
        runtimeLimitMinutes: z.number().int().min(1).max(525_600).optional(),
      }),
      z.strictObject({ share: shareView, password: z.string() }),
    ),
  'share.list': () =>
    method("The POV's sharing portals as last read (gone ones included, marked)", z.strictObject({ povId: id }), shareList),
  'share.extend': () =>
    method(
      "Move a share link's expiry (never past the POV's auto-delete time)",
      z.strictObject({ povId: id, shareId: skytapId, expiresAt: instant }),
      z.strictObject({ share: shareView }),
    ),
  'share.rotatePassword': () =>
    method(
      'Give a share link a new generated password (returned once; the keychain keeps it)',
      z.strictObject({ povId: id, shareId: skytapId }),
      z.strictObject({ share: shareView, password: z.string() }),
    ),
  'share.password': () =>
    method(
      'Read a share link\'s password again from the keychain ("Show again")',
      z.strictObject({ povId: id, shareId: skytapId }),
      z.strictObject({ password: z.string() }),
    ),
  'share.revoke': () =>
    method(
      'Delete a share link in Skytap (one Skytap already deleted counts as revoked) and forget its password',
      z.strictObject({ povId: id, shareId: skytapId }),
      ok,
    ),
});
