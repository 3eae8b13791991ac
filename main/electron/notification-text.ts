import type { NotificationView } from '../../shared/contract/notify';
import { withZones } from '../../shared/time-zones';

/**
 * What an OS notification says: the core's body carries ISO instants (the ladder's deletion time);
 * the OS shows each in the SE's zone with the customer's beside it, as the in-app list does.
 * Kept apart from notifications.ts (which needs the Electron binary) so a unit test can read it.
 */
export function osNotificationOptions(n: NotificationView, customerTz: string | null, se?: string) {
  return {
    title: n.title,
    body: withZones(n.body, customerTz, se),
    urgency: n.urgent ? ('critical' as const) : ('normal' as const),
    timeoutType: n.urgent ? ('never' as const) : ('default' as const),
  };
}
