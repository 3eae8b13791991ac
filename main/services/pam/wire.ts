import { AppError, toWireError } from '../../../shared/contract/errors';
import type { AgentTasks } from './agent-tasks';
import { checkBrokerHost, type BrokerHostFacts } from './broker-check';
import type { EntitleClient } from './entitle';
import type { PasswordSafeClient } from './password-safe';
import type { PraClient } from './pra';
import type { PamRepo } from './repo';
import { povTag, type PamJob, type Sleep } from './types';

/**
 * Wiring a POV into its tenants (docs/pam.md). Every object is found before it is created (by
 * code_name, name or tag in the tenant itself, never only by what this database remembers), so a
 * re-run after a crash anywhere — even between a create and its record — makes no duplicate.
 * Each product and each VM fails on its own: the failure lands on its row and the rest goes on.
 */
export interface PamVm {
  vmId: string;
  name: string;
  os: 'linux' | 'windows' | 'unknown';
  ip: string | null;
  /** What the platform reports (absent in tests that do not care): the broker host's check reads them. */
  guestOs?: string | null;
  networkType?: 'automatic' | 'manual' | null;
  networkId?: string | null;
  networkName?: string | null;
}

export interface PamPov {
  id: string;
  name: string;
  /** The enrolled control node's agent, or null (the Gateway container then waits). */
  agentId: string | null;
  /** The VM named as the Resource Broker host (pov.setRoleHosts), if any. */
  brokerHost: string | null;
  /** The control node's VM (the broker host must share its network); null when none is resolved. */
  controlNodeVmId?: string | null;
  vms: PamVm[];
}

export interface WireSettings {
  gatewayImage: string;
  gatewayArgs: string[];
  connectTimeoutMs: number;
  connectPollMs: number;
}

export interface WireDeps {
  repo: PamRepo;
  pov: PamPov;
  pra: PraClient | null;
  ps: PasswordSafeClient | null;
  entitle: EntitleClient | null;
  agent: AgentTasks | null;
  brokerInstallKey: string | null;
  functionalAccounts: { linux?: { accountName: string; password?: string }; windows?: { accountName: string; password?: string } };
  managedAccounts: { linux: string[]; windows: string[] };
  settings: WireSettings;
  sleep: Sleep;
  /** Crash-injection tests throw here; production leaves it unset. */
  checkpoint?: (step: string) => void;
}

export const GATEWAY_CONTAINER = 'povdesk-jumpoint';
export const ENTITLE_SSH_REASON =
  "off: Entitle's SSH integrations need the Entitle agent, which officially runs on Kubernetes (Helm chart); a POV control node runs Docker only. Access goes through Entitle's PRA integration (just-in-time membership of the POV's jump group) instead.";

export function jumpGroupName(pov: { id: string; name: string }): string {
  // Entitle resource names are 2–50 characters and Entitle names the resource after the group.
  return `${pov.name.slice(0, 40).trim() || 'POV'} ${pov.id.slice(0, 8)}`;
}

const message = (err: unknown) => toWireError(err).message;

export interface WireResult {
  problems: string[];
  jumpItems: number;
  assets: number;
  connected: boolean;
}

export async function wirePov(d: WireDeps, job: PamJob): Promise<WireResult> {
  const { repo, pov } = d;
  const tag = povTag(pov.id);
  const check = d.checkpoint ?? (() => {});
  const problems: string[] = [];
  const mark = repo.mark.bind(repo, pov.id);
  /** Runs one step; its failure is recorded on the artifact and in the job, never thrown (but cancel is). */
  const step = async (kind: Parameters<typeof mark>[0], key: string, what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      if (job.signal.aborted || (err instanceof AppError && err.code === 'cancelled')) throw err;
      const why = message(err);
      mark(kind, key, { state: 'failed', error: why });
      problems.push(`${what}: ${why}`);
      job.log(`${what} failed: ${why}`, 'warn');
    }
  };
  const wiredVms = pov.vms.filter((v) => v.os !== 'unknown' && v.ip);
  for (const v of pov.vms.filter((x) => !wiredVms.includes(x))) {
    const why = v.os === 'unknown' ? 'its OS is unknown; set it on the VMs tab' : 'it has no IP address yet; press Refresh VMs';
    for (const kind of ['jump_item', 'asset'] as const) mark(kind, v.vmId, { state: 'skipped', error: why });
    job.log(`${v.name} is skipped: ${why}`, 'warn');
  }

  // 1. PRA: the Jump Group and the POV Gateway (a clustered linux-x86 Jumpoint), by code_name.
  job.progress('PRA: jump group and Jumpoint', 0.05);
  let groupId: number | null = null;
  let jumpoint: { id: number; deployKey: string | null } | null = null;
  if (!d.pra) {
    for (const k of ['jump_group', 'jumpoint'] as const)
      mark(k, '', { state: 'skipped', error: 'no PRA tenant is saved for this POV; enter it in the Access panel' });
  } else {
    const pra = d.pra;
    await step('jump_group', '', 'PRA jump group', async () => {
      let g = await pra.findJumpGroup(tag);
      if (!g) {
        g = await pra.createJumpGroup({ name: jumpGroupName(pov), code_name: tag, comments: `POV Desk: POV ${pov.name}` });
        check('created:jump_group');
        job.log(`created jump group ${g.name} (${g.id})`);
      }
      groupId = g.id;
      mark('jump_group', '', { state: 'done', remote_id: String(g.id), detail: g.name });
    });
    await step('jumpoint', '', 'PRA Jumpoint (POV Gateway)', async () => {
      let j = await pra.findJumpoint(tag);
      if (!j) {
        j = await pra.createJumpoint({
          name: `POV Gateway ${pov.name.slice(0, 200)} ${pov.id.slice(0, 8)}`,
          code_name: tag,
          platform: 'linux-x86',
          clustered: true,
          shell_jump_enabled: true,
          protocol_tunnel_enabled: true,
          external_jump_item_network_id: tag,
          comments: `POV Desk: the POV Gateway of ${pov.name}`,
        });
        check('created:jumpoint');
        job.log(`created Jumpoint ${j.name} (${j.id})`);
      }
      if (j.clustered === false || j.platform !== 'linux-x86') {
        throw new AppError(
          'conflict',
          `Jumpoint ${j.name} (code_name ${tag}) is not a clustered linux-x86 Jumpoint, so it cannot run as a container; delete it in PRA and Wire again`,
        );
      }
      jumpoint = { id: j.id, deployKey: j.docker_deploy_key ?? null };
      mark('jumpoint', '', {
        state: j.connected ? 'done' : 'waiting',
        remote_id: String(j.id),
        detail: JSON.stringify({ connected: Boolean(j.connected), node: null }),
        error: j.connected ? null : 'not connected yet',
      });
    });
  }

  // 2. The Gateway container on the control node, then wait for the Jumpoint to connect.
  job.progress('POV Gateway container', 0.2);
  let connected = false;
  const jp = jumpoint as { id: number; deployKey: string | null } | null;
  if (jp) {
    await step('container', '', 'Gateway container', async () => {
      if (!d.settings.gatewayImage)
        throw new AppError(
          'unavailable',
          'no Jumpoint container image is set; enter it in the Access panel (PAM settings), then Wire again',
        );
      if (!d.agent || !pov.agentId) {
        mark('container', '', {
          state: 'waiting',
          error: 'the control node is not enrolled yet; install it (POV list → Install control node), then Wire again',
        });
        return;
      }
      if (!jp.deployKey)
        throw new AppError('unavailable', 'PRA returned no docker_deploy_key for the Jumpoint; it must be a clustered linux-x86 Jumpoint');
      const r = await d.agent.runContainer(
        pov.agentId,
        GATEWAY_CONTAINER,
        { image: d.settings.gatewayImage, env: { DEPLOY_KEY: jp.deployKey }, args: d.settings.gatewayArgs },
        job.signal,
      );
      check('created:container');
      mark('container', '', {
        state: 'done',
        remote_id: GATEWAY_CONTAINER,
        detail: `${d.settings.gatewayImage} on the control node (${r.state})`,
      });
      job.log(`asked the control node to run the Jumpoint container (${r.state})`);
    });
    if (repo.artifact(pov.id, 'container')?.state === 'done') {
      await step('jumpoint', '', 'POV Gateway connection', async () => {
        const deadline = Date.now() + d.settings.connectTimeoutMs;
        for (;;) {
          const j = await d.pra!.getJumpoint(jp.id);
          if (!j) throw new AppError('not_found', `Jumpoint ${jp.id} is gone from PRA; Wire again to recreate it`);
          if (j.connected) {
            const nodes = await d.pra!.jumpointNodes(jp.id);
            const node = nodes.map((n) => [n.hostname, n.private_ip].filter(Boolean).join(' ')).join(', ') || null;
            mark('jumpoint', '', { state: 'done', detail: JSON.stringify({ connected: true, node }), error: null });
            job.log(`POV Gateway connected${node ? `: ${node}` : ''}`);
            connected = true;
            return;
          }
          if (Date.now() >= deadline) {
            mark('jumpoint', '', {
              state: 'waiting',
              error: `not connected ${Math.round(d.settings.connectTimeoutMs / 1000)} s after the container started; check the container's log on the control node and the image setting`,
            });
            job.log('the POV Gateway has not connected yet', 'warn');
            problems.push('POV Gateway: not connected yet');
            return;
          }
          job.progress('POV Gateway: waiting for connected', null);
          await d.sleep(d.settings.connectPollMs, job.signal);
        }
      });
    }
  }

  // 3. One jump item per VM through the Gateway: shell-jump (Linux, ssh 22) or remote-rdp (Windows).
  job.progress('jump items', 0.4);
  const gid = groupId as number | null;
  for (const vm of wiredVms) {
    const type = vm.os === 'linux' ? 'shell-jump' : 'remote-rdp';
    if (!jp || gid === null) {
      mark('jump_item', vm.vmId, { state: 'skipped', error: 'the Jumpoint or jump group is missing (see above)', detail: type });
      continue;
    }
    await step('jump_item', vm.vmId, `jump item for ${vm.name}`, async () => {
      let it = await d.pra!.findJumpItem(type, jp.id, vm.name);
      if (!it) {
        const common = { name: vm.name, jumpoint_id: jp.id, hostname: vm.ip!, jump_group_id: gid, tag, comments: `POV Desk: ${pov.name}` };
        it =
          type === 'shell-jump'
            ? await d.pra!.createShellJump({ ...common, protocol: 'ssh', port: 22 })
            : await d.pra!.createRemoteRdp(common);
        check('created:jump_item');
        job.log(`created ${type} jump item ${vm.name} (${it.id})`);
      }
      mark('jump_item', vm.vmId, { state: 'done', remote_id: String(it.id), detail: type });
    });
  }

  // 4. The Resource Broker: the agent runs the installer on the marked (or only) Windows VM.
  job.progress('Resource Broker', 0.5);
  await wireBroker(d, job, mark, step);

  // 5. Password Safe: workgroup, functional accounts, then asset → managed system → accounts per VM.
  job.progress('Password Safe', 0.6);
  if (!d.ps) {
    mark('workgroup', '', { state: 'skipped', error: 'no Password Safe tenant is saved for this POV' });
  } else {
    await step('workgroup', '', 'Password Safe', () => d.ps!.session(() => onboard(d, job, tag, wiredVms, step)));
  }

  // 6. Entitle: just-in-time membership of the POV's jump group through its PRA integration.
  job.progress('Entitle', 0.85);
  if (!d.entitle) {
    mark('entitle_resource', '', { state: 'skipped', error: 'no Entitle token is saved for this POV' });
  } else if (gid === null) {
    mark('entitle_resource', '', { state: 'skipped', error: 'the jump group is missing (see PRA)' });
  } else {
    await step('entitle_resource', '', 'Entitle', async () => {
      const integ = await d.entitle!.praIntegration();
      if (!integ)
        throw new AppError(
          'not_found',
          "Entitle has no BeyondTrust PRA integration; add it in Entitle (Integrations → Add → BeyondTrust PRA) for this POV's PRA site, then Wire again",
        );
      const name = jumpGroupName(pov);
      let res = await d.entitle!.findResource(integ.id, name);
      if (!res) {
        res = await d.entitle!.createResource(integ.id, name, `POV Desk: jump group ${name} of POV ${pov.name}`);
        check('created:entitle_resource');
        job.log(`Entitle: jump group ${name} is requestable through ${integ.name}`);
      }
      mark('entitle_resource', '', { state: 'done', remote_id: res.id, detail: `${integ.name}: ${name}` });
    });
  }

  const jumpItems = repo.artifacts(pov.id, 'jump_item').filter((a) => a.state === 'done').length;
  const assets = repo.artifacts(pov.id, 'asset').filter((a) => a.state === 'done').length;
  job.progress('done', 1, problems.length ? `${problems.length} problem(s)` : 'wired');
  return { problems, jumpItems, assets, connected };
}

type Step = (kind: Parameters<PamRepo['mark']>[1], key: string, what: string, fn: () => Promise<void>) => Promise<void>;
type Mark = (kind: Parameters<PamRepo['mark']>[1], key: string, patch: Parameters<PamRepo['mark']>[3]) => void;

/** The Windows VM for the broker: the one named as broker host, else the only Windows VM. */
export function brokerVm(pov: PamPov): PamVm | { refusal: string } {
  const win = pov.vms.filter((v) => v.os === 'windows');
  if (pov.brokerHost) {
    const named = pov.vms.filter((v) => v.name.toLowerCase() === pov.brokerHost!.toLowerCase());
    if (named.length !== 1)
      return { refusal: `no single VM is called ${pov.brokerHost} (the Resource Broker host); fix the name (name VM)` };
    if (named[0]!.os !== 'windows')
      return { refusal: `${named[0]!.name} is not a Windows VM; the Resource Broker installs on Windows Server` };
    return named[0]!;
  }
  if (win.length === 1) return win[0]!;
  return {
    refusal: win.length
      ? `several Windows VMs (candidates: ${win.map((v) => v.name).join(', ')}); name the Resource Broker host`
      : 'the POV has no Windows VM for the Resource Broker',
  };
}

function hostFacts(v: PamVm): BrokerHostFacts {
  return {
    name: v.name,
    guestOs: v.guestOs ?? null,
    networkType: v.networkType ?? null,
    networkId: v.networkId ?? null,
    networkName: v.networkName ?? null,
  };
}

async function wireBroker(d: WireDeps, job: PamJob, mark: Mark, step: Step) {
  if (!d.brokerInstallKey) {
    mark('broker', '', { state: 'skipped', error: 'no Resource Broker install key is saved (generate one in the Password Safe portal)' });
    return;
  }
  const vm = brokerVm(d.pov);
  if ('refusal' in vm) {
    mark('broker', '', { state: 'failed', error: vm.refusal });
    return;
  }
  if (!vm.ip) {
    mark('broker', '', { state: 'failed', error: `${vm.name} has no IP address yet; press Refresh VMs` });
    return;
  }
  const cn = d.pov.controlNodeVmId ? (d.pov.vms.find((v) => v.vmId === d.pov.controlNodeVmId) ?? null) : null;
  const check = checkBrokerHost(hostFacts(vm), cn ? hostFacts(cn) : null);
  if (check.refusal) {
    mark('broker', '', { state: 'failed', error: check.refusal });
    return;
  }
  for (const u of check.unknowns) job.log(`Resource Broker host: ${u}`, 'warn');
  if (d.repo.artifact(d.pov.id, 'broker')?.state === 'done') return; // verified earlier: nothing to redo
  await step('broker', '', 'Resource Broker', async () => {
    if (!d.agent || !d.pov.agentId) {
      mark('broker', '', { state: 'waiting', detail: vm.name, error: 'the control node is not enrolled yet; install it, then Wire again' });
      return;
    }
    const r = await d.agent.installBroker(d.pov.agentId, vm.ip!, d.brokerInstallKey!, job.signal);
    mark('broker', '', { state: 'waiting', remote_id: vm.vmId, detail: vm.name, error: null });
    job.log(`asked the control node to run the Resource Broker installer on ${vm.name} (${r.state}); no API reports broker health`);
  });
}

const PLATFORM: Record<'linux' | 'windows', RegExp> = { linux: /^linux$/i, windows: /^windows$/i };

async function onboard(d: WireDeps, job: PamJob, tag: string, vms: PamVm[], step: Step) {
  const { repo, pov } = d;
  const ps = d.ps!;
  const check = d.checkpoint ?? (() => {});
  let wg = (await ps.workgroups()).find((w) => w.Name.toLowerCase() === tag.toLowerCase());
  if (!wg) {
    wg = await ps.createWorkgroup(tag);
    check('created:workgroup');
    job.log(`created Password Safe workgroup ${tag}`);
  }
  repo.mark(pov.id, 'workgroup', '', { state: 'done', remote_id: String(wg.ID), detail: tag });
  const platforms = await ps.platforms();
  const platformId = (os: 'linux' | 'windows') =>
    platforms.find((p) => PLATFORM[os].test(p.Name) || PLATFORM[os].test(p.ShortName ?? ''))?.PlatformID ?? null;

  const fa: Partial<Record<'linux' | 'windows', number>> = {};
  for (const os of ['linux', 'windows'] as const) {
    const want = d.functionalAccounts[os];
    const pid = platformId(os);
    if (!want || !pid || !vms.some((v) => v.os === os)) continue;
    await step('functional_account', os, `functional account (${os})`, async () => {
      const display = `${tag} ${os}`;
      let acct = (await ps.functionalAccounts()).find((a) => a.DisplayName === display && a.PlatformID === pid);
      if (!acct) {
        acct = await ps.createFunctionalAccount({
          PlatformID: pid,
          AccountName: want.accountName,
          DisplayName: display,
          Description: `POV Desk: ${pov.name}`,
          ...(want.password ? { Password: want.password } : {}),
        });
        check('created:functional_account');
      }
      fa[os] = acct.FunctionalAccountID;
      repo.mark(pov.id, 'functional_account', os, { state: 'done', remote_id: String(acct.FunctionalAccountID), detail: want.accountName });
    });
  }

  const assets = await ps.assets(wg.ID);
  let answered: string | null = null;
  for (const vm of vms) {
    const os = vm.os as 'linux' | 'windows';
    await step('asset', vm.vmId, `Password Safe onboarding of ${vm.name}`, async () => {
      const pid = platformId(os);
      if (!pid) throw new AppError('not_found', `Password Safe lists no ${os} platform`);
      let asset = assets.find((a) => a.AssetName.toLowerCase() === vm.name.toLowerCase() && a.IPAddress === vm.ip);
      if (!asset) {
        asset = await ps.createAsset(wg!.ID, {
          IPAddress: vm.ip!,
          AssetName: vm.name,
          OperatingSystem: os === 'linux' ? 'Linux' : 'Windows',
          Description: `POV Desk: ${pov.name}`,
        });
        check('created:asset');
      }
      repo.mark(pov.id, 'asset', vm.vmId, { state: 'done', remote_id: String(asset.AssetID), detail: vm.ip });
      let sys = await ps.managedSystemOf(asset.AssetID);
      if (!sys) {
        const auto = fa[os] !== undefined;
        sys = await ps.createManagedSystem(asset.AssetID, {
          PlatformID: pid,
          ContactEmail: '',
          Description: `POV Desk: ${pov.name}`,
          ...(os === 'linux' ? { Port: 22 } : {}),
          ReleaseDuration: 120,
          MaxReleaseDuration: 525600,
          ISAReleaseDuration: 120,
          AutoManagementFlag: auto,
          ...(auto ? { FunctionalAccountID: fa[os] } : {}),
          ChangeFrequencyType: 'first',
          ChangeTime: '23:30',
          RemoteClientType: 'None',
        });
        check('created:managed_system');
      }
      repo.mark(pov.id, 'managed_system', vm.vmId, { state: 'done', remote_id: String(sys.ManagedSystemID), detail: auto(fa[os]) });
      if (!answered && (await ps.managedSystem(sys.ManagedSystemID))) answered = vm.name;
      const listed = d.managedAccounts[os];
      if (listed.length && fa[os] === undefined) {
        repo.mark(pov.id, 'managed_account', `${vm.vmId}/*`, {
          state: 'skipped',
          error: `managed accounts need a functional account for ${os} to auto-manage them`,
        });
        return;
      }
      const existing = listed.length ? await ps.managedAccounts(sys.ManagedSystemID) : [];
      for (const name of listed) {
        let acct = existing.find((a) => a.AccountName.toLowerCase() === name.toLowerCase());
        if (!acct) {
          acct = await ps.createManagedAccount(sys.ManagedSystemID, {
            AccountName: name,
            AutoManagementFlag: true,
            Description: `POV Desk: ${pov.name}`,
          });
          check('created:managed_account');
        }
        repo.mark(pov.id, 'managed_account', `${vm.vmId}/${name}`, {
          state: 'done',
          remote_id: String(acct.ManagedAccountID ?? acct.AccountId ?? ''),
          detail: name,
        });
      }
    });
  }
  // The broker has no health API: Password Safe answering for a managed system behind it is the signal.
  const broker = repo.artifact(pov.id, 'broker');
  if (answered && broker && broker.state === 'waiting' && broker.remote_id) {
    repo.mark(pov.id, 'broker', '', {
      state: 'done',
      error: null,
      detail: `${broker.detail ?? ''}; Password Safe answers for ${answered}`,
    });
  }
}

function auto(id: number | undefined): string {
  return id === undefined ? 'not auto-managed (no functional account)' : `auto-managed by functional account ${id}`;
}
