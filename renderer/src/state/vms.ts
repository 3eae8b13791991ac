import type { z } from 'zod';
import type { VmConnection, VmConsoleChunk, VmHost, VmImage, VmRecord, vmMethods } from '../../../shared/contract/vm';
import { create } from 'zustand';
import { api, errorText, type ApiError } from '../api';
import { LIVE_VM_STATES } from '../../../shared/vm-states';

type VmMethods = typeof vmMethods;
type M = keyof VmMethods;

/** A typed call to a vm.* method (the renderer bundle carries no zod: types only). */
export function vmCall<K extends M>(method: K, args: z.input<VmMethods[K]['args']>): Promise<z.output<VmMethods[K]['result']>> {
  return (api.call as (m: string, a: unknown) => Promise<unknown>)(method, args) as Promise<z.output<VmMethods[K]['result']>>;
}

export const subscribeConsole = (id: string, fn: (chunk: VmConsoleChunk, bytes: number) => void): (() => void) =>
  (api.subscribe as (s: string, k: string, f: (d: unknown, b: number) => void) => () => void)('vm.console', id, (d, b) => fn(d as VmConsoleChunk, b));
export const ackConsole = (id: string, bytes: number): void => (api.ack as (s: string, k: string, b: number) => void)('vm.console', id, bytes);

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
      const host = await vmCall('vm.host', recheck ? { recheck } : {});
      set({ host, hostError: null, hostLoading: false });
    } catch (e) {
      set({ host: null, hostError: errorText(e), hostLoading: false });
    }
    vmCall('vm.connection', {})
      .then((connection) => set({ connection }))
      .catch(() => undefined);
  },
  refresh: async () => {
    try {
      const [{ vms }, { images }] = await Promise.all([vmCall('vm.list', {}), vmCall('vm.images', {})]);
      set({ vms, images, listError: null });
    } catch (e) {
      set({ listError: errorText(e) });
      // a refused login: read the connection again, so its panel offers "Log in"
      if ((e as ApiError).code === 'unauthorized') {
        vmCall('vm.connection', {})
          .then((connection) => set({ connection }))
          .catch(() => undefined);
      }
    }
  },
}));

export function seconds(v: number | null): string {
  return v === null ? '–' : `${v.toFixed(1)} s`;
}

export function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}
