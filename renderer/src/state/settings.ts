import { create } from 'zustand';
import type { SettingsView } from '../../../shared/contract';
import { api, errorText } from '../api';

interface SettingsState {
  view: SettingsView | null;
  error: string | null;
  load(): Promise<void>;
  set(view: SettingsView): void;
}

export const useSettings = create<SettingsState>((set) => ({
  view: null,
  error: null,
  set: (view) => set({ view, error: null }),
  load: async () => {
    try {
      set({ view: await api.call('settings.get', {}), error: null });
    } catch (e) {
      set({ error: errorText(e) });
    }
  },
}));
