import { create } from 'zustand';
import type { NotificationView, NotifySettings } from '../../../shared/contract/notify';
import { api, errorText } from '../api';

/** Toasts hide themselves after this; urgent ones (the last ladder step) stay until dismissed. */
export const TOAST_MS = 5000;

interface NotifyState {
  items: NotificationView[];
  unread: number;
  toasts: NotificationView[];
  settings: NotifySettings | null;
  error: string | null;
  load(): Promise<void>;
  /** Follows `notify.event`; `show` is called once per new notification (toast + OS notification). */
  follow(show: (n: NotificationView) => void): () => void;
  dismiss(id: string): void;
  markAllRead(): Promise<void>;
  setDnd(on: boolean): Promise<void>;
}

export const useNotify = create<NotifyState>((set, get) => ({
  items: [],
  unread: 0,
  toasts: [],
  settings: null,
  error: null,
  load: async () => {
    try {
      const [list, settings] = await Promise.all([api.call('notify.list', { limit: 100 }), api.call('notify.getSettings', {})]);
      set({ items: list.items, unread: list.unread, settings, error: null });
    } catch (e) {
      set({ error: errorText(e) });
    }
  },
  follow: (show) => {
    const seen = new Set<string>();
    return api.subscribe('notify.event', '*', (n) => {
      if (seen.has(n.id)) return; // one toast per notification, however often it is delivered
      seen.add(n.id);
      set((s) => ({ items: [n, ...s.items.filter((x) => x.id !== n.id)], unread: s.unread + 1, toasts: [...s.toasts, n] }));
      show(n);
      if (!n.urgent) setTimeout(() => get().dismiss(n.id), TOAST_MS);
    });
  },
  dismiss: (id) => set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })),
  markAllRead: async () => {
    await api.call('notify.markRead', {});
    await get().load();
  },
  setDnd: async (on) => {
    const settings = await api.call('notify.setSettings', { doNotDisturb: on });
    set({ settings });
  },
}));
