import { create } from 'zustand';
import type { SettingsView } from '../../../shared/contract';
import { api, errorText } from '../api';

interface SettingsState {
  view: SettingsView | null;
  error: string | null;
  load(): Promise<void>;
  set(view: SettingsView): void;
}

/**
 * Bumped by every load and every set: an answer to a load that a later save (or load) overtook is
 * dropped, so a slow `settings.get` cannot put back "token not set" over the view a save returned.
 */
let generation = 0;

export const useSettings = create<SettingsState>((set) => ({
  view: null,
  error: null,
  set: (view) => {
    generation++;
    set({ view, error: null });
  },
  load: async () => {
    const mine = ++generation;
    try {
      const view = await api.call('settings.get', {});
      if (mine === generation) set({ view, error: null });
    } catch (e) {
      if (mine === generation) set({ error: errorText(e) });
    }
  },
}));
