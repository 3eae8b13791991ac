import { inferOs, type Environment, type Vm } from '../skytap/schemas';
import type { SkytapApi } from '../pov/types';
import type { LabEnvironment, LabPlatform, LabVm } from './platform';

/** What the Skytap platform calls: the lifecycle's subset of SkytapClient (with per-VM user_data). */
export type SkytapPlatformApi = SkytapApi;

/** A network type as Skytap words it; anything else is not reported. */
function networkType(t: string | null | undefined): 'automatic' | 'manual' | null {
  return t === 'automatic' || t === 'manual' ? t : null;
}

/**
 * One Skytap VM as the lab platforms describe VMs: the first interface with an IP gives
 * ip/hostname; the network is an automatic one when any interface has one (the metadata service
 * answers there), else that interface's; published services come from every interface.
 */
export function labVmFromSkytap(vm: Vm): LabVm {
  const nics = vm.interfaces ?? [];
  const nic = nics.find((i) => i.ip) ?? nics[0];
  const net = nics.find((i) => i.network_type === 'automatic') ?? nic;
  return {
    network: net ? { id: net.network_id ?? null, name: net.network_name ?? null, type: networkType(net.network_type) } : null,
    published: nics
      .flatMap((i) => i.services ?? [])
      .map((x) => ({ internalPort: x.internal_port, externalHost: x.external_ip, externalPort: x.external_port })),
    id: vm.id,
    name: vm.name,
    os: inferOs(vm),
    guestOs: vm.hardware?.guestOS ?? null,
    ip: nic?.ip || null,
    hostname: nic?.hostname || null,
    runstate: vm.runstate ?? null,
  };
}

function labEnv(e: Environment): LabEnvironment {
  return { id: e.id, name: e.name, runstate: e.runstate, vms: e.vms.map(labVmFromSkytap), rateLimited: e.rate_limited };
}

/**
 * Skytap behind the LabPlatform interface: the client calls the POV lifecycle has always made,
 * one for one. Skytap assigns the environment id on create (envIdFor is null), so the lifecycle
 * keeps its unclear-create rules for it; get() carries rate_limited, so a queued operation is
 * polled, never re-submitted; a busy environment is never mutated; delete is done only at 404.
 */
export class SkytapPlatform implements LabPlatform {
  readonly id = 'skytap' as const;

  constructor(private readonly api: SkytapPlatformApi) {}

  async templateName(templateId: string): Promise<string | null> {
    return (await this.api.listTemplates()).find((t) => t.id === templateId)?.name ?? null;
  }

  envIdFor(): string | null {
    return null;
  }

  /** POST /configurations: one request, never repeated here (the lifecycle decides what a lost answer means). */
  async create(req: { templateId: string; name: string }): Promise<LabEnvironment> {
    return labEnv(await this.api.createEnvironment({ templateId: req.templateId, name: req.name }));
  }

  async get(envId: string, opts: { vms?: boolean } = {}): Promise<LabEnvironment | null> {
    const e = await this.api.getEnvironment(envId);
    if (!e) return null;
    if (opts.vms === false) return labEnv(e);
    // A GET of an environment may omit its VMs; the VM list is authoritative.
    return { ...labEnv(e), vms: (await this.api.listVms(envId)).map(labVmFromSkytap) };
  }

  async vms(envId: string): Promise<LabVm[]> {
    return (await this.api.listVms(envId)).map(labVmFromSkytap);
  }

  async power(envId: string, target: 'running' | 'suspended'): Promise<LabEnvironment> {
    return labEnv(await this.api.setRunstate(envId, target));
  }

  poweredRunstate(target: 'running' | 'suspended'): string {
    return target;
  }

  delete(envId: string): Promise<'deleted' | 'already_gone'> {
    return this.api.deleteEnvironment(envId);
  }

  /** Skytap has no "no user_data": clearing writes the empty string, as the install always did. */
  setUserData(envId: string, vmId: string, contents: string | null): Promise<void> {
    return this.api.setVmUserData(envId, vmId, contents ?? '');
  }

  /** envNameFor's tag: "<name> [povdesk <tag>]". */
  async findByTag(tag?: string): Promise<{ id: string; name: string }[]> {
    const mark = tag === undefined ? /\[povdesk [0-9a-f]{8}\]$/ : new RegExp(`\\[povdesk ${tag.replace(/[^0-9a-z]/g, '')}\\]$`);
    return (await this.api.listEnvironments()).filter((e) => mark.test(e.name)).map((e) => ({ id: e.id, name: e.name }));
  }

  /** The first environment of the (paginated) listing with exactly this name. */
  async findByName(name: string): Promise<LabEnvironment | null> {
    const e = (await this.api.listEnvironments()).find((x) => x.name === name);
    return e ? labEnv(e) : null;
  }
}
