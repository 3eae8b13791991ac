import type { VmConnection, VmConsoleChunk, VmHost, VmImage, VmRecord } from '../../../shared/contract/vm';
import { create } from 'zustand';
import { api, errorText, type ApiError } from '../api';
import { LIVE_VM_STATES } from '../../../shared/vm-states';

export const subscribeConsole = (id: string, fn: (chunk: VmConsoleChunk, bytes: number) => void): (() => void) =>
  api.subscribe('vm.console', id, fn);
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
  /** Reads vm.connection alone (no host probe). */
  loadConnection(): Promise<void>;
  refresh(): Promise<void>;
  /** Follows `vm.updated` and `vm.imagesUpdated` while at least one component holds it; returns the release. */
  follow(): () => void;
  /** One VM as an event gave it (null: gone). */
  apply(id: string, vm: VmRecord | null): void;
}

let holders = 0;
let stop: (() => void) | null = null;
/** Events that arrived while vm.list was on its way: newer than its answer. */
let sinceList: Map<string, VmRecord | null> | null = null;

function withVm(list: VmRecord[], id: string, vm: VmRecord | null): VmRecord[] {
  if (!vm) return list.filter((v) => v.id !== id);
  const at = list.findIndex((v) => v.id === id);
  return at === -1 ? [...list, vm] : list.map((v, i) => (i === at ? vm : v));
}

/**
 * What the Local VMs page shows: host report, images, VMs. VMs are read once and then follow
 * `vm.updated` (the app re-reads the manager for its followers; the page never polls).
 */
export const useVms = create<VmsState>((set, get) => ({
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
    void get().loadConnection();
  },
  loadConnection: async () => {
    try {
      set({ connection: await api.call('vm.connection', {}) });
    } catch {
      // the Connection panel and the create dialog work without it
    }
  },
  refresh: async () => {
    const newer = (sinceList = new Map());
    try {
      const [{ vms }, { images }] = await Promise.all([api.call('vm.list', {}), api.call('vm.images', {})]);
      set({ vms: [...newer].reduce((list, [id, vm]) => withVm(list, id, vm), vms), images, listError: null });
    } catch (e) {
      set({ listError: errorText(e) });
      // a refused login: read the connection again, so its panel offers "Log in"
      if ((e as ApiError).code === 'unauthorized') {
        api
          .call('vm.connection', {})
          .then((connection) => set({ connection }))
          .catch(() => undefined);
      }
    } finally {
      if (sinceList === newer) sinceList = null;
    }
  },
  apply: (id, vm) => {
    sinceList?.set(id, vm);
    set((s) => (s.vms ? { vms: withVm(s.vms, id, vm) } : {}));
  },
  follow: () => {
    if (holders++ === 0) {
      const offVms = api.subscribe('vm.updated', '*', ({ id, vm }) => get().apply(id, vm));
      const offImages = api.subscribe('vm.imagesUpdated', '*', ({ images }) => set({ images }));
      stop = () => {
        offVms();
        offImages();
      };
    }
    return () => {
      if (--holders === 0) {
        stop?.();
        stop = null;
      }
    };
  },
}));

export function seconds(v: number | null): string {
  return v === null ? '–' : `${v.toFixed(1)} s`;
}

export function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}
