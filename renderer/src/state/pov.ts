import type { z } from 'zod';
import { create } from 'zustand';
import type { PovView, PovVmView } from '../../../shared/contract/pov';
import type { controlNodeMethods } from '../../../shared/contract/controlNode';
import type { povMethods } from '../../../shared/contract/pov';
import type { skytapMethods } from '../../../shared/contract/skytap';
import { api, errorText } from '../api';

type PovContract = typeof povMethods & typeof skytapMethods & typeof controlNodeMethods;
export type PovMethod = keyof PovContract;

/**
 * Calls a pov.* / skytap.* / reconcile.* method through the one api object, typed from this
 * domain's own contract file (so it compiles before and after the contract index spreads it in).
 */
export function callPov<M extends PovMethod>(
  method: M,
  args: z.input<PovContract[M]['args']>,
): Promise<z.output<PovContract[M]['result']>> {
  const call = api.call as unknown as (m: string, a: unknown) => Promise<unknown>;
  return call(method, args) as Promise<z.output<PovContract[M]['result']>>;
}

interface PovState {
  povs: PovView[] | null;
  error: string | null;
  loading: boolean;
  /** The last action error, shown near the list until the next action. */
  actionError: string | null;
  load(): Promise<void>;
  act(method: 'pov.start' | 'pov.suspend' | 'pov.destroy' | 'pov.refreshVms', id: string): Promise<string | null>;
  reconcile(): Promise<string | null>;
  /** Install control node: starts the control-node.install job; an error shows near the list. */
  installControlNode(id: string): Promise<string | null>;
  create(templateId: string, name: string, autoDeleteAt?: string, customerTz?: string): Promise<string>;
  detail: Record<string, { pov: PovView; vms: PovVmView[] }>;
  loadDetail(id: string): Promise<void>;
  setVmOs(povId: string, vmId: string, os: PovVmView['osOverride']): Promise<void>;
}

export const usePovs = create<PovState>((set, get) => ({
  povs: null,
  error: null,
  loading: false,
  actionError: null,
  detail: {},
  load: async () => {
    set({ loading: true });
    try {
      const { povs } = await callPov('pov.list', {});
      set({ povs, error: null, loading: false });
    } catch (e) {
      set({ error: errorText(e), loading: false });
    }
  },
  act: async (method, id) => {
    set({ actionError: null });
    try {
      const { jobId } = await callPov(method, { id });
      await get().load();
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  installControlNode: async (id) => {
    set({ actionError: null });
    try {
      const { jobId } = await callPov('pov.installControlNode', { id });
      await get().load();
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  reconcile: async () => {
    set({ actionError: null });
    try {
      const { jobId } = await callPov('reconcile.runNow', {});
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  create: async (templateId, name, autoDeleteAt, customerTz) => {
    const { jobId } = await callPov('pov.create', { templateId, name, ...(autoDeleteAt ? { autoDeleteAt } : {}), ...(customerTz ? { customerTz } : {}) });
    await get().load();
    return jobId;
  },
  loadDetail: async (id) => {
    const d = await callPov('pov.get', { id });
    set((s) => ({ detail: { ...s.detail, [id]: d } }));
  },
  setVmOs: async (povId, vmId, os) => {
    const { vm } = await callPov('pov.setVmOs', { povId, vmId, os });
    set((s) => {
      const d = s.detail[povId];
      if (!d) return {};
      return { detail: { ...s.detail, [povId]: { ...d, vms: d.vms.map((v) => (v.vmId === vmId ? vm : v)) } } };
    });
  },
}));

/**
 * The control-node install job: its progress changes the row's Control node cell, so the list is
 * read again when it starts, moves on a step, or settles. It is not a lifecycle job: its failure
 * belongs beside the Control node column, never in the row's Status.
 */
export const CONTROL_NODE_JOB_KIND = 'control-node.install';

/** Job kinds that change a POV row; when one settles the list is read again. */
export const POV_JOB_KINDS = new Set(['pov_create', 'pov_start', 'pov_suspend', 'pov_destroy', 'pov_refresh_vms', 'pov_env_reconcile']);
