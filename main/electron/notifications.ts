import { Notification, type BrowserWindow } from 'electron';
import type { NotificationView } from '../../shared/contract/notify';
import type { StreamHub, Subscriber } from '../core/streams';
import { osNotificationOptions } from './notification-text';

/**
 * OS notifications in Electron: every `notify.event` (already de-duplicated, and not held by
 * do-not-disturb — the service never publishes a held one) becomes an Electron Notification. The
 * last ladder step is urgent: `critical` on Linux, `timeoutType: 'never'`. A click brings the
 * window forward and publishes `notify.clicked`, which the renderer answers by opening the POV
 * with Extend focused. Times in the body are shown in the SE's zone and the POV's customer zone
 * (`customerTz`, notification-text.ts). Covered by test/e2e/share.spec.ts under the `_electron` project (it skips
 * where no Electron binary exists).
 */
export function showOsNotifications(
  hub: StreamHub,
  window: () => BrowserWindow | null,
  customerTz: (povId: string) => string | null,
): () => void {
  if (!Notification.isSupported()) return () => undefined;
  const sub: Subscriber = {
    unacked: new Map(),
    send(stream, key, data, bytes) {
      hub.ack(sub, stream, key, bytes);
      const n = data as NotificationView;
      const note = new Notification(osNotificationOptions(n, n.povId ? customerTz(n.povId) : null));
      note.on('click', () => {
        const w = window();
        if (w) {
          if (w.isMinimized()) w.restore();
          w.show();
          w.focus();
        }
        hub.publish('notify.clicked', n.id, n);
      });
      note.show();
    },
  };
  return hub.subscribe('notify.event', '*', sub);
}
