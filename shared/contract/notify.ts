import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { method, noArgs, ok, stream, lazyMethods } from './define';
import { AUTO_DELETE_MAX_DAYS, LADDER_MAX_HOURS, LADDER_MAX_STEPS } from './values';

export { AUTO_DELETE_MAX_DAYS, LADDER_MAX_HOURS, LADDER_MAX_STEPS };

export const NOTIFICATION_KINDS = ['ladder', 'job', 'auto_delete'] as const;

export const notificationView = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    kind: z.enum(NOTIFICATION_KINDS),
    povId: z.string().nullable(),
    title: z.string(),
    body: z.string(),
    /** The last ladder step: shown even under do-not-disturb, never auto-hidden. */
    urgent: z.boolean(),
    /** How many identical events this one row stands for. */
    count: z.number().int().positive(),
    /** Held by do-not-disturb: listed, but no toast or OS notification was shown. */
    held: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
    readAt: z.string().nullable(),
    /** Withdrawn (e.g. the POV was extended): no longer true. */
    withdrawnAt: z.string().nullable(),
  }),
);
export type NotificationView = z.infer<typeof notificationView>;

export const notifySettings = lazySchema(() =>
  z.strictObject({
    doNotDisturb: z.boolean(),
    /** Hours before deletion at which the ladder warns, e.g. [168, 72, 24, 1]. */
    ladderHours: z.array(z.number().int().min(1).max(LADDER_MAX_HOURS)).min(1).max(LADDER_MAX_STEPS),
    /** The auto-delete time a new POV gets, in days from its creation. */
    autoDeleteDays: z.number().int().min(1).max(AUTO_DELETE_MAX_DAYS),
  }),
);
export type NotifySettings = z.infer<typeof notifySettings>;

export const notifyMethods = lazyMethods({
  'notify.list': () =>
    method(
      'The in-app notification list, newest first',
      z.strictObject({ limit: z.number().int().min(1).max(500).optional() }),
      z.strictObject({ items: z.array(notificationView), unread: z.number().int().nonnegative() }),
    ),
  'notify.markRead': () =>
    method(
      'Mark notifications read (all when ids is absent)',
      z.strictObject({ ids: z.array(z.string().min(1).max(100)).max(500).optional() }),
      ok,
    ),
  'notify.getSettings': () => method('Do-not-disturb, the warning ladder and the default auto-delete time', noArgs, notifySettings),
  'notify.setSettings': () =>
    method('Change do-not-disturb, the ladder or the default auto-delete time', notifySettings.partial().strict(), notifySettings),
});

export const notifyStreams = {
  'notify.event': stream('A new notification (after de-duplication); subscribe with key "*"', notificationView),
  'notify.clicked': stream('An OS notification was clicked (Electron): open its POV with Extend focused', notificationView),
} as const;
