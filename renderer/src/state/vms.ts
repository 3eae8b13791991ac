import type { VmConnection, VmConsoleChunk, VmHost, VmImage, VmRecord } from '../../../shared/contract/vm';
import { create } from 'zustand';
import { api, errorText } from '../api';
import { LIVE_VM_STATES } from '../../../shared/vm-states';

export const subscribeConsole = (id: string, fn: (chunk: VmConsoleChunk, bytes: number) => void): (() => void) => api.subscribe('vm.console', id, fn);
export const ackConsole = (id: string, bytes: number): void => api.ack('vm.console', id, bytes);

/** Which actions a state allows (the manager refuses the others with a conflict anyway). */
export function allowed(state: VmRecord['state']) {
  const live = LIVE_VM_STATES.includes(state);
  return {
    start: state === 'stopped' || state === 'failed',
    stop: live,
    reboot: live,
    delete: state !== 'deleting',
  };
}

interface VmsState {
  host: VmHost | null;
  hostError: string | null;
  hostLoading: boolean;
  connection: VmConnection | null;
  images: VmImage[] | null;
  vms: VmRecord[] | null;
  listError: string | null;
  loadHost(recheck?: boolean): Promise<void>;
  refresh(): Promise<void>;
}

/** What the Local VMs page shows: host report, images, VMs (re-read while the page is open). */
export const useVms = create<VmsState>((set) => ({
  host: null,
  hostError: null,
  hostLoading: false,
  connection: null,
  images: null,
  vms: null,
  listError: null,
  loadHost: async (recheck = false) => {
    set({ hostLoading: true });
    try {
      const host = await api.call('vm.host', recheck ? { recheck } : {});
      set({ host, hostError: null, hostLoading: false });
    } catch (e) {
      set({ host: null, hostError: errorText(e), hostLoading: false });
    }
    api.call('vm.connection', {})
      .then((connection) => set({ connection }))
      .catch(() => undefined);
  },
  refresh: async () => {
    try {
      const [{ vms }, { images }] = await Promise.all([api.call('vm.list', {}), api.call('vm.images', {})]);
      set({ vms, images, listError: null });
    } catch (e) {
      set({ listError: errorText(e) });
    }
  },
}));

export function seconds(v: number | null): string {
  return v === null ? '–' : `${v.toFixed(1)} s`;
}

export function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}
