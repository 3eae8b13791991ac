/**
 * The Skytap emulator's world: templates, projects, environments and their VMs, with the
 * documented time behaviour (an environment is busy for a while after a create, a runstate change
 * or a delete; a delete completes asynchronously; creation does not start the VMs).
 * Time comes from `now()` so a test can drive it; the defaults use the wall clock.
 */

export type StableRunstate = 'running' | 'suspended' | 'stopped';
export type TargetRunstate = 'running' | 'suspended' | 'stopped' | 'halted';

export interface VmSeed {
  name: string;
  /** VMware guest identifier, e.g. "centos-64", "windows9srv-64"; null or "" for blank. */
  guestOS?: string | null;
  ip?: string | null;
  hostname?: string | null;
  networkType?: 'automatic' | 'manual';
  /** The network's name (default "Default Network" or "Manual Network" by type). */
  networkName?: string;
  /** Guest ports published in the template: each environment made from it gets its own external port. */
  publishedPorts?: number[];
}

/**
 * A published service as Skytap reports it in an interface's `services[]` (and at
 * `…/interfaces/{nic}/services`): the guest's `internal_port` NATed to `external_ip:external_port`,
 * the id being the internal port as a string (skytap/skytap-sdk-go's examples). Skytap picks the
 * external port, and `external_ip` is a host name of the region's service endpoint.
 */
export interface EmuService {
  id: string;
  internalPort: number;
  externalIp: string;
  externalPort: number;
}

export interface TemplateSeed {
  id?: string;
  name: string;
  description?: string;
  region?: string;
  busy?: boolean;
  vms?: VmSeed[];
  projects?: string[];
}

export interface EmuTemplate {
  id: string;
  name: string;
  description: string;
  region: string;
  busy: boolean;
  vms: VmSeed[];
  projects: Set<string>;
}

export interface EmuVm {
  id: string;
  name: string;
  guestOS: string | null;
  ip: string | null;
  hostname: string | null;
  networkType: 'automatic' | 'manual';
  networkName: string;
  services: EmuService[];
  userData: string;
}

export interface EmuEnv {
  id: string;
  name: string;
  templateId: string | null;
  region: string;
  /** The state it rests in when not busy. */
  runstate: StableRunstate;
  /** While set, the environment answers runstate "busy"; at this time it becomes `target`. */
  busyUntil: number | null;
  target: StableRunstate;
  /** Fault: never leaves busy. */
  stuckBusy: boolean;
  /** A power operation Skytap queued under load (rate_limited: true until it starts). */
  queued: { target: StableRunstate; at: number } | null;
  /** Delete accepted: answers busy until this time, then 404. */
  deletingAt: number | null;
  vms: EmuVm[];
  projects: Set<string>;
  createdAt: number;
}

export interface Timing {
  createBusyMs: number;
  runstateBusyMs: number;
  deleteMs: number;
  rateLimitedMs: number;
}

export const DEFAULT_TIMING: Timing = { createBusyMs: 300, runstateBusyMs: 300, deleteMs: 300, rateLimitedMs: 500 };

export interface Credentials {
  username: string;
  token: string;
}

export class EmulatorState {
  readonly templates = new Map<string, EmuTemplate>();
  readonly environments = new Map<string, EmuEnv>();
  readonly projects = new Set<string>();
  credentials: Credentials;
  timing: Timing;
  /** Added before every collection page is answered (for the sweep bench). */
  pageLatencyMs = 0;
  /** Retry-After (seconds) sent with the emulator's own 423 busy replies. */
  busyRetryAfterSec = 1;
  now: () => number;
  /** Extra fields of every environment body (sharing.ts adds publish_sets). */
  envJsonExtra: ((env: EmuEnv, baseUrl: string) => Record<string, unknown>) | null = null;
  private nextTemplate = 500;
  private nextEnv = 1000;
  private nextVm = 9000;
  private nextExternalPort = 17000;

  constructor(opts: { credentials?: Credentials; timing?: Partial<Timing>; now?: () => number } = {}) {
    this.credentials = opts.credentials ?? { username: 'demo', token: 'demo-token' };
    this.timing = { ...DEFAULT_TIMING, ...(opts.timing ?? {}) };
    this.now = opts.now ?? Date.now;
  }

  /** Moves this emulator's clock forward (schedules end, busy phases finish). */
  advance(ms: number): void {
    const prev = this.now;
    this.now = () => prev() + ms;
  }

  /** Forgets every template, project and environment (ids keep counting up, as Skytap's do). */
  clear(): void {
    this.templates.clear();
    this.environments.clear();
    this.projects.clear();
  }

  addProject(id: string): string {
    this.projects.add(id);
    return id;
  }

  addTemplate(seed: TemplateSeed): EmuTemplate {
    const id = seed.id ?? String(this.nextTemplate++);
    const t: EmuTemplate = {
      id,
      name: seed.name,
      description: seed.description ?? '',
      region: seed.region ?? 'US-West',
      busy: seed.busy ?? false,
      vms: seed.vms ?? [],
      projects: new Set(seed.projects ?? []),
    };
    for (const p of t.projects) this.projects.add(p);
    this.templates.set(id, t);
    return t;
  }

  private makeVms(seeds: VmSeed[], envIndex: number): EmuVm[] {
    return seeds.map((s, i) => ({
      id: String(this.nextVm++),
      name: s.name,
      guestOS: s.guestOS === undefined ? null : s.guestOS,
      ip: s.ip === undefined ? `10.0.${envIndex % 250}.${10 + i}` : s.ip,
      hostname:
        s.hostname === undefined
          ? s.name
              .toLowerCase()
              .replace(/[^a-z0-9-]/g, '-')
              .slice(0, 32)
          : s.hostname,
      networkType: s.networkType ?? 'automatic',
      networkName: s.networkName ?? ((s.networkType ?? 'automatic') === 'automatic' ? 'Default Network' : 'Manual Network'),
      services: (s.publishedPorts ?? []).map((port) => this.newService(port)),
      userData: '',
    }));
  }

  /** A published service for a guest port: Skytap assigns the external port (never reused here). */
  newService(internalPort: number, region = 'US-West'): EmuService {
    const host = `services-${region.toLowerCase().replace(/[^a-z]/g, '')}.skytap.com`;
    return { id: String(internalPort), internalPort, externalIp: host, externalPort: this.nextExternalPort++ };
  }

  serviceJson(svc: EmuService): Record<string, unknown> {
    return { id: svc.id, internal_port: svc.internalPort, external_ip: svc.externalIp, external_port: svc.externalPort };
  }

  /** The id of a VM's one interface (the emulator gives every VM one NIC). */
  nicId(env: EmuEnv, vm: EmuVm): string {
    return `nic-${env.id}-${vm.id}-0`;
  }

  /** Adds an environment directly (seeding; the bench's 2,000). Not busy unless asked. */
  addEnvironment(seed: { name: string; templateId?: string; runstate?: StableRunstate; vms?: VmSeed[]; projects?: string[] }): EmuEnv {
    const id = String(this.nextEnv++);
    const tpl = seed.templateId ? this.templates.get(seed.templateId) : undefined;
    const env: EmuEnv = {
      id,
      name: seed.name,
      templateId: seed.templateId ?? null,
      region: tpl?.region ?? 'US-West',
      runstate: seed.runstate ?? 'stopped',
      busyUntil: null,
      target: seed.runstate ?? 'stopped',
      stuckBusy: false,
      queued: null,
      deletingAt: null,
      vms: this.makeVms(seed.vms ?? tpl?.vms ?? [], Number(id)),
      projects: new Set(seed.projects ?? []),
      createdAt: this.now(),
    };
    for (const p of env.projects) this.projects.add(p);
    this.environments.set(id, env);
    return env;
  }

  /** What POST /configurations does: copy the template's VMs, busy, then stopped (not started). */
  createFromTemplate(tpl: EmuTemplate, name: string, projectId: string | null): EmuEnv {
    const env = this.addEnvironment({ name, templateId: tpl.id, runstate: 'stopped', projects: projectId ? [projectId] : [] });
    env.busyUntil = this.now() + this.timing.createBusyMs;
    env.target = 'stopped';
    return env;
  }

  /** Brings an environment up to date with the clock; returns undefined once a delete finished. */
  settle(id: string): EmuEnv | undefined {
    const env = this.environments.get(id);
    if (!env) return undefined;
    const now = this.now();
    if (env.deletingAt !== null && !env.stuckBusy && now >= env.deletingAt) {
      this.environments.delete(id);
      return undefined;
    }
    if (env.queued && now >= env.queued.at) {
      env.busyUntil = now + this.timing.runstateBusyMs;
      env.target = env.queued.target;
      env.queued = null;
    }
    if (env.busyUntil !== null && !env.stuckBusy && now >= env.busyUntil) {
      env.runstate = env.target;
      env.busyUntil = null;
    }
    return env;
  }

  isBusy(env: EmuEnv): boolean {
    return env.stuckBusy || env.busyUntil !== null || env.deletingAt !== null;
  }

  /** Starts a runstate change (the caller checked it is not busy). halted ends as stopped. */
  beginRunstate(env: EmuEnv, target: TargetRunstate, opts: { rateLimited?: boolean } = {}): void {
    const stable: StableRunstate = target === 'halted' ? 'stopped' : target;
    if (opts.rateLimited) {
      env.queued = { target: stable, at: this.now() + this.timing.rateLimitedMs };
      return;
    }
    if (stable === env.runstate) return;
    env.busyUntil = this.now() + this.timing.runstateBusyMs;
    env.target = stable;
  }

  beginDelete(env: EmuEnv): void {
    env.deletingAt = this.now() + this.timing.deleteMs;
  }

  /** Fault helper: the environment stays busy until released. */
  stayBusy(id: string, on = true): void {
    const env = this.environments.get(id);
    if (!env) throw new Error(`emulator: no environment ${id}`);
    env.stuckBusy = on;
  }

  /** Every environment id that exists (deleting ones included until their delete completes). */
  environmentIds(): string[] {
    return [...this.environments.keys()].filter((id) => this.settle(id) !== undefined);
  }

  // ---- JSON views, in Skytap's shapes ------------------------------------------------------

  vmJson(env: EmuEnv, vm: EmuVm, baseUrl: string): Record<string, unknown> {
    const runstate = this.isBusy(env) ? 'busy' : env.runstate;
    return {
      id: vm.id,
      name: vm.name,
      runstate,
      rate_limited: env.queued !== null,
      error: false,
      hardware: { cpus: 2, cpus_per_socket: 1, ram: 4096, guestOS: vm.guestOS, architecture: 'x86', svms: 2 },
      interfaces: [
        {
          id: this.nicId(env, vm),
          ip: vm.ip,
          hostname: vm.hostname,
          mac: `00:50:56:${hex(Number(vm.id) >> 16)}:${hex(Number(vm.id) >> 8)}:${hex(Number(vm.id))}`,
          nic_type: 'vmxnet3',
          network_type: vm.networkType,
          network_id: `net-${env.id}-${vm.networkName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
          network_name: vm.networkName,
          status: runstate === 'running' ? 'Running' : 'Powered off',
          services: vm.services.map((svc) => this.serviceJson(svc)),
        },
      ],
      configuration_url: `${baseUrl}/v2/configurations/${env.id}`,
      supports_suspend: true,
    };
  }

  envJson(env: EmuEnv, baseUrl: string): Record<string, unknown> {
    return {
      id: env.id,
      url: `${baseUrl}/v2/configurations/${env.id}`,
      name: env.name,
      description: null,
      runstate: this.isBusy(env) ? 'busy' : env.runstate,
      rate_limited: env.queued !== null,
      region: env.region,
      vm_count: env.vms.length,
      errors: [],
      error_details: [],
      created_at: skytapDate(env.createdAt),
      suspend_on_idle: null,
      can_delete: true,
      vms: env.vms.map((vm) => this.vmJson(env, vm, baseUrl)),
      networks: [],
      ...(this.envJsonExtra?.(env, baseUrl) ?? {}),
    };
  }

  templateJson(t: EmuTemplate, baseUrl: string): Record<string, unknown> {
    return {
      id: t.id,
      url: `${baseUrl}/v2/templates/${t.id}`,
      name: t.name,
      description: t.description,
      busy: t.busy,
      region: t.region,
      vm_count: t.vms.length,
      public: false,
      vms: t.vms.map((s, i) => ({
        id: `${t.id}${String(i).padStart(2, '0')}`,
        name: s.name,
        runstate: 'stopped',
        hardware: { cpus: 2, ram: 4096, guestOS: s.guestOS ?? null, architecture: 'x86' },
        interfaces: [],
      })),
    };
  }
}

function hex(n: number): string {
  return (n & 0xff).toString(16).padStart(2, '0');
}

/** Skytap's date format: `YYYY/MM/dd HH:mm:ss +0000`. */
function skytapDate(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  );
}
