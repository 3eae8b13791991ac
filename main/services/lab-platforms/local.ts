import { AppError } from '../../../shared/contract/errors';
import { osValue, type OsValue } from '../../../shared/contract/pov';
import type { VmManagerClient } from '../../vm-api/client';
import { GUEST_HOST_ALIAS, type HostForward, type LocalVm } from '../../vm-api/povdesk';
import { managerCall } from '../vm/errors';
import { povTag, type LabEnvironment, type LabPlatform, type LabVm, type TemplateSource, type VmResetOutcome } from './platform';

/**
 * What the Local platform calls on a vm-manager: giantswarm's VM routes, plus POV Desk's
 * user-data route (`setUserData`, PUT /vms/{id}/povdesk/user-data), which a manager without it
 * (giantswarm's own) answers 404.
 */
export type LocalVmApi = Pick<
  VmManagerClient,
  'list' | 'get' | 'create' | 'start' | 'stop' | 'delete' | 'networks' | 'createNetwork' | 'deleteNetwork'
> & {
  setUserData?(id: string, userData: string | null): Promise<void>;
  setNetworkInternet?(name: string, internet: boolean): Promise<unknown>;
  saveClean?(id: string): Promise<unknown>;
  resetClean?(id: string): Promise<LocalVm>;
};

/**
 * Every local POV's network: the POV's own switch, so the same addresses in every POV collide with
 * nothing (as Skytap's automatic networks do); the gateway is its first address.
 */
export const LOCAL_POV_CIDR = '10.0.0.0/24';

/** The name prefix of every VM the Local platform makes: `povdesk-<tag>-`. */
export const LOCAL_ENV_PREFIX = 'povdesk-';

/** A local environment's id: the POV's tag under the prefix (`povdesk-1a2b3c4d`). */
export function localEnvId(tag: string): string {
  return `${LOCAL_ENV_PREFIX}${tag}`;
}

/** The vm-manager name of a template VM in an environment: `<env id>-<vm name>`, a DNS label. */
export function localVmName(envId: string, vmName: string): string {
  return `${envId}-${vmName.toLowerCase()}`;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function portOf(u: URL): number {
  return u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
}

/**
 * The guest→host forwards a local POV's VMs are created with: when the agent's control-plane URL
 * names GUEST_HOST_ALIAS, its port inside the guest reaches the app's control-plane URL's port on
 * the vm-manager's host, which must then be loopback (guests are otherwise fenced off the host).
 * None otherwise. Throws (nothing created) when the two URLs cannot be paired.
 */
export function hostForwardsFor(cfg: { agentUrl: string; controlPlaneUrl: string }): HostForward[] {
  if (!cfg.agentUrl) return [];
  let agent: URL;
  try {
    agent = new URL(cfg.agentUrl);
  } catch {
    return [];
  }
  if (agent.hostname !== GUEST_HOST_ALIAS) return [];
  let cp: URL | null;
  try {
    cp = new URL(cfg.controlPlaneUrl);
  } catch {
    cp = null;
  }
  if (!cp || !LOOPBACK.has(cp.hostname)) {
    throw new AppError(
      'invalid_request',
      `the agent's control-plane URL ${cfg.agentUrl} names ${GUEST_HOST_ALIAS} (a forward to the vm-manager's host), so the ` +
        `control-plane URL must be on this host's loopback (http://127.0.0.1:<port>), not ${cfg.controlPlaneUrl || 'empty'}; fix ` +
        `Settings → Control node`,
    );
  }
  return [{ guest_port: portOf(agent), host_port: portOf(cp) }];
}

const BUSY = new Set(['creating', 'installing', 'stopping', 'deleting']);
/**
 * Powered on, as Skytap's `running` is: QEMU runs, whether or not the guest has booted. A VM from
 * a baked template never reports READY, so it stays `booting` until the manager's boot timer; the
 * payload must not wait for that (the runner polls from boot).
 */
const UP = new Set(['booting', 'attesting', 'ready', 'running']);

/** The environment's runstate from its VMs' states, in Skytap's words where they mean the same. */
export function localRunstate(states: string[]): string {
  if (states.some((s) => s === 'failed')) return 'failed';
  if (states.some((s) => BUSY.has(s))) return 'busy';
  if (states.every((s) => UP.has(s))) return 'running';
  if (states.every((s) => s === 'stopped')) return 'stopped';
  return 'mixed';
}

type ApiVm = Awaited<ReturnType<LocalVmApi['list']>>[number];

/**
 * The Local platform: a POV's environment is its VMs on the connected vm-manager (the app's own,
 * or a remote one), each named `povdesk-<tag>-<template vm name>`, so everything a POV made is
 * found by name after any crash. The environment id is that prefix, known before anything is
 * created. Power: the vm-manager's stop/start (a stopped VM boots again from its disk; nothing in
 * memory survives). docs/lab-platforms.md.
 */
export class LocalPlatform implements LabPlatform {
  readonly id = 'local' as const;

  constructor(
    private readonly o: {
      api: () => Promise<LocalVmApi>;
      templates: TemplateSource;
      /** Guest→host forwards every VM is created with (hostForwardsFor over the control-node settings). */
      hostForwards?: () => HostForward[];
    },
  ) {}

  private async call<T>(what: string, fn: (api: LocalVmApi) => Promise<T>): Promise<T> {
    const api = await this.o.api();
    return managerCall(what, () => fn(api));
  }

  private async vmsOf(envId: string): Promise<ApiVm[]> {
    const all = await this.call('GET /vms', (a) => a.list());
    return all.filter((v) => v.name.startsWith(`${envId}-`));
  }

  private labVm(envId: string, v: ApiVm): LabVm {
    const os = osValue.safeParse(v.metadata?.['povdesk-os']);
    return {
      id: v.id,
      name: v.metadata?.['povdesk-vm'] ?? v.name.slice(envId.length + 1),
      os: os.success ? os.data : ('unknown' as OsValue),
      guestOs: null,
      // The VM's address on the POV's network (its lease). A link-local one (an older manager's
      // user-mode address, the same in every VM) is no address for the payload's policy.
      ip: v.ip && !v.ip.startsWith('169.254.') ? v.ip : null,
      hostname: v.hostname ?? null,
      runstate: v.state,
    };
  }

  async templateName(templateId: string): Promise<string | null> {
    return this.o.templates.get(templateId)?.name ?? null;
  }

  envIdFor(tag: string): string {
    return localEnvId(tag);
  }

  /** Whether the environment's network (named as the environment) exists on the manager. */
  private async hasNetwork(envId: string): Promise<boolean> {
    const all = await this.call('GET /networks', (a) => a.networks());
    return all.some((n) => n.spec.name === envId);
  }

  async create(
    req: { envId: string | null; templateId: string; name: string; internet?: boolean },
    step: (name: string) => void = () => {},
  ): Promise<LabEnvironment> {
    const envId = req.envId;
    if (!envId) throw new AppError('internal', 'a local environment is named before it is created; no environment id was given');
    const t = this.o.templates.get(req.templateId);
    if (!t) throw new AppError('not_found', `No local template ${req.templateId}; pick one from the template list.`);
    const forwards = this.o.hostForwards?.() ?? [];
    // The network first, named as the environment (committed before anything exists), so a crash
    // at any step leaves nothing a re-run or a destroy cannot find by name.
    if (!(await this.hasNetwork(envId))) {
      step('before-create-network');
      try {
        await this.call(`POST /networks (${envId})`, (a) => a.createNetwork({ name: envId, cidr: LOCAL_POV_CIDR }));
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'conflict')) throw err; // made meanwhile: fine
      }
      step('after-create-network');
    }
    // The POV's Internet access, switched on before its network existed: before any VM starts on it.
    if (req.internet) await this.setInternet(envId, true);
    const have = new Set((await this.vmsOf(envId)).map((v) => v.name));
    for (const vm of t.vms) {
      const name = localVmName(envId, vm.name);
      if (have.has(name)) continue; // made by an earlier, interrupted attempt
      step(`before-create-vm:${vm.name}`);
      await this.call(`POST /vms (${name})`, (a) =>
        a.create({
          name,
          image: vm.image,
          cpus: vm.cpus,
          memory_mib: vm.memoryMib,
          disk_gib: vm.diskGib,
          require_attestation: vm.requireAttestation,
          metadata: { 'povdesk-env': envId, 'povdesk-vm': vm.name, 'povdesk-os': vm.os },
          network: envId,
          // The lifecycle polls: a long TCG boot never holds a request open.
          wait_for: 'none',
          // Only when asked for: giantswarm's manager refuses the povdesk object.
          ...(forwards.length ? { povdesk: { host_forwards: forwards } } : {}),
        }),
      );
      step(`after-create-vm:${vm.name}`);
    }
    const env = await this.get(envId);
    if (!env) throw new AppError('internal', `the vm-manager lists no VM of ${envId} right after creating them`);
    return env;
  }

  /** Null once neither a VM nor the network of the environment is left. */
  async get(envId: string): Promise<LabEnvironment | null> {
    const vms = await this.vmsOf(envId);
    if (vms.length === 0)
      return (await this.hasNetwork(envId)) ? { id: envId, name: envId, runstate: 'stopped', vms: [], remnant: true } : null;
    return { id: envId, name: envId, runstate: localRunstate(vms.map((v) => v.state)), vms: vms.map((v) => this.labVm(envId, v)) };
  }

  /** The POV's "Internet access": its network's, which each VM follows at its next start. */
  async setInternet(envId: string, on: boolean): Promise<void> {
    const api = await this.o.api();
    if (!api.setNetworkInternet)
      throw new AppError(
        'unsupported',
        "this vm-manager cannot switch a network's Internet access (it has no POV Desk network route); use the app's own vm-manager",
      );
    // No network yet (a create cut short before it): the create applies the POV's switch when it makes it.
    if (!(await this.hasNetwork(envId))) return;
    await managerCall('PUT network internet', () => api.setNetworkInternet!(envId, on));
  }

  async vms(envId: string): Promise<LabVm[]> {
    return (await this.get(envId))?.vms ?? [];
  }

  /** Starts every stopped or failed VM, or stops every running one; answers null (the caller polls). */
  async power(envId: string, target: 'running' | 'suspended'): Promise<null> {
    const vms = await this.vmsOf(envId);
    if (vms.length === 0) throw new AppError('not_found', `the vm-manager has no VM of ${envId}; it was deleted outside POV Desk`);
    for (const v of vms) {
      if (target === 'running' && (v.state === 'stopped' || v.state === 'failed'))
        await this.call(`POST /vms/${v.id}/start`, (a) => a.start(v.id));
      if (target === 'suspended' && UP.has(v.state)) await this.call(`POST /vms/${v.id}/stop`, (a) => a.stop(v.id));
    }
    return null;
  }

  /** Suspend is the vm-manager's stop: the environment then reads 'stopped'. */
  poweredRunstate(target: 'running' | 'suspended'): string {
    return target === 'running' ? 'running' : 'stopped';
  }

  async delete(envId: string, step: (name: string) => void = () => {}): Promise<'deleted' | 'already_gone'> {
    const vms = await this.vmsOf(envId);
    for (const v of vms) {
      const short = this.labVm(envId, v).name;
      step(`before-delete-vm:${short}`);
      try {
        await this.call(`DELETE /vms/${v.id}`, (a) => a.delete(v.id));
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'not_found')) throw err;
      }
      step(`after-delete-vm:${short}`);
    }
    // The network after its last VM (the manager refuses it while one is attached).
    const net = await this.hasNetwork(envId);
    if (net) {
      step('before-delete-network');
      try {
        await this.call(`DELETE /networks/${envId}`, (a) => a.deleteNetwork(envId));
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'not_found')) throw err;
      }
      step('after-delete-network');
    }
    return vms.length || net ? 'deleted' : 'already_gone';
  }

  async setUserData(_envId: string, vmId: string, contents: string | null): Promise<void> {
    const api = await this.o.api();
    const unsupported = new AppError(
      'unsupported',
      'this vm-manager takes user_data only at create (it has no POV Desk user-data route, PUT /vms/{id}/povdesk/user-data); ' +
        "use the app's own vm-manager for the control-node install",
    );
    if (!api.setUserData) throw unsupported;
    try {
      await managerCall('PUT user-data', () => api.setUserData!(vmId, contents));
    } catch (err) {
      // 404 is either the VM or the route: the VM answering GET means the route is missing.
      if (
        err instanceof AppError &&
        err.code === 'not_found' &&
        (await managerCall('GET /vms', () => api.get(vmId)).then(
          () => true,
          () => false,
        ))
      )
        throw unsupported;
      throw err;
    }
  }

  async saveClean(envId: string): Promise<void> {
    await this.eachVm(envId, 'save-clean', (a, id) => a.saveClean!(id));
  }

  async resetClean(envId: string): Promise<VmResetOutcome[]> {
    const answers = await this.eachVm(envId, 'reset-clean', (a, id) => a.resetClean!(id));
    return answers.map(({ vm, answer }) => {
      const last = answer.povdesk?.lastReset;
      // A manager that does not say how the reset went: the VM boots its saved disks, as far as the app can tell.
      return { vm, resumed: last?.memory ?? false, note: last ? last.note : 'the vm-manager did not say how the reset went' };
    });
  }

  private async eachVm<T>(
    envId: string,
    route: string,
    fn: (a: LocalVmApi, id: string) => Promise<T>,
  ): Promise<{ vm: string; answer: T }[]> {
    const api = await this.o.api();
    if (!api.saveClean || !api.resetClean)
      throw new AppError(
        'unsupported',
        "this vm-manager cannot save or reset a clean state (it has no POV Desk clean-state routes); use the app's own vm-manager",
      );
    const out: { vm: string; answer: T }[] = [];
    for (const v of await this.vmsOf(envId))
      out.push({ vm: v.name, answer: await managerCall(`POST /vms/${v.id}/povdesk/${route}`, () => fn(api, v.id)) });
    return out;
  }

  /** A local environment's name is its id (`povdesk-<tag>`). */
  async findByName(name: string): Promise<LabEnvironment | null> {
    return name.startsWith(LOCAL_ENV_PREFIX) ? this.get(name) : null;
  }

  async findByTag(tag?: string): Promise<{ id: string; name: string }[]> {
    const prefix = tag === undefined ? LOCAL_ENV_PREFIX : `${localEnvId(povTag(tag))}-`;
    const all = await this.call('GET /vms', (a) => a.list());
    const ids = new Set<string>();
    for (const v of all) {
      const m = /^(povdesk-[0-9a-f]{8})-/.exec(v.name);
      if (m && v.name.startsWith(prefix)) ids.add(m[1]!);
    }
    return [...ids].map((id) => ({ id, name: id }));
  }
}
