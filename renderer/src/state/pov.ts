import { create } from 'zustand';
import type { PovView, PovVmView } from '../../../shared/contract/pov';
import { api, errorText } from '../api';

let holders = 0;
let stop: (() => void) | null = null;
/** Events that arrived while pov.list was on its way: newer than its answer. */
let sinceLoad: Map<string, PovView> | null = null;

interface PovState {
  povs: PovView[] | null;
  error: string | null;
  loading: boolean;
  /** The last action error, shown near the list until the next action. */
  actionError: string | null;
  load(): Promise<void>;
  /** Follows `pov.updated` while at least one component holds it; returns the release. */
  follow(): () => void;
  /** One POV as an event gave it: replaces its row and its detail. */
  apply(pov: PovView): void;
  act(method: 'pov.start' | 'pov.suspend' | 'pov.destroy' | 'pov.refreshVms', id: string): Promise<string | null>;
  reconcile(): Promise<string | null>;
  /** Install control node: starts the pov.installControlNode job; an error shows near the list. */
  installControlNode(id: string): Promise<string | null>;
  /** pov.create on a lab platform (omitted: Skytap); returns the create job's id. */
  create(input: {
    platform?: 'skytap' | 'local';
    templateId: string;
    name: string;
    autoDeleteAt?: string;
    customerTz?: string;
  }): Promise<string>;
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
    const newer = (sinceLoad = new Map());
    try {
      const { povs } = await api.call('pov.list', {});
      set({ povs: [...newer.values()].reduce(withPov, povs), error: null, loading: false });
    } catch (e) {
      set({ error: errorText(e), loading: false });
    } finally {
      if (sinceLoad === newer) sinceLoad = null;
    }
  },
  apply: (pov) => {
    sinceLoad?.set(pov.id, pov);
    set((s) => ({
      povs: s.povs ? withPov(s.povs, pov) : s.povs,
      detail: s.detail[pov.id] ? { ...s.detail, [pov.id]: { ...s.detail[pov.id]!, pov } } : s.detail,
    }));
  },
  follow: () => {
    if (holders++ === 0) stop = api.subscribe('pov.updated', '*', (pov) => get().apply(pov));
    return () => {
      if (--holders === 0) {
        stop?.();
        stop = null;
      }
    };
  },
  act: async (method, id) => {
    set({ actionError: null });
    try {
      const { jobId } = await api.call(method, { id });
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  installControlNode: async (id) => {
    set({ actionError: null });
    try {
      const { jobId } = await api.call('pov.installControlNode', { id });
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  reconcile: async () => {
    set({ actionError: null });
    try {
      const { jobId } = await api.call('reconcile.runNow', {});
      return jobId;
    } catch (e) {
      set({ actionError: errorText(e) });
      return null;
    }
  },
  create: async ({ platform, templateId, name, autoDeleteAt, customerTz }) => {
    const { jobId } = await api.call('pov.create', {
      templateId,
      name,
      ...(platform && platform !== 'skytap' ? { platform } : {}),
      ...(autoDeleteAt ? { autoDeleteAt } : {}),
      ...(customerTz ? { customerTz } : {}),
    });
    return jobId;
  },
  loadDetail: async (id) => {
    const d = await api.call('pov.get', { id });
    set((s) => ({ detail: { ...s.detail, [id]: d } }));
  },
  setVmOs: async (povId, vmId, os) => {
    const { vm } = await api.call('pov.setVmOs', { povId, vmId, os });
    set((s) => {
      const d = s.detail[povId];
      if (!d) return {};
      return { detail: { ...s.detail, [povId]: { ...d, vms: d.vms.map((v) => (v.vmId === vmId ? vm : v)) } } };
    });
  },
}));

/** The list as pov.list orders it (newest first), without destroyed POVs. */
function withPov(list: PovView[], pov: PovView): PovView[] {
  const rest = list.filter((p) => p.id !== pov.id);
  if (pov.state === 'destroyed') return rest;
  const at = rest.findIndex((p) => p.createdAt < pov.createdAt || (p.createdAt === pov.createdAt && p.id > pov.id));
  return at === -1 ? [...rest, pov] : [...rest.slice(0, at), pov, ...rest.slice(at)];
}
