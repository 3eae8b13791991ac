/**
 * Wiring a POV into its tenants (docs/pam.md). Every object is found before it is created (by
 * code_name, name or tag in the tenant itself, never only by what this database remembers), so a
 * re-run after a crash anywhere — even between a create and its record — makes no duplicate.
 * Each product and each VM fails on its own: the failure lands on its row and the rest goes on.
 * This file runs the steps in order (PRA, the Gateway container, jump items, Entitle); the Resource
 * Broker is ./wire-broker, Password Safe ./wire-password-safe, the shared types ./wire-types.
 */
import { AppError, toWireError } from '../../../shared/contract/errors';
import { povTag, type PamJob } from './types';
import { wireBroker } from './wire-broker';
import { onboard } from './wire-password-safe';
import type { WireDeps, WireResult } from './wire-types';

export type { PamPov, PamVm, WireDeps, WireResult, WireSettings } from './wire-types';

export const GATEWAY_CONTAINER = 'povdesk-jumpoint';
export const ENTITLE_SSH_REASON =
  "off: Entitle's SSH integrations need the Entitle agent, which officially runs on Kubernetes (Helm chart); " +
  'a POV control node runs Docker only. ' +
  "Access goes through Entitle's PRA integration (just-in-time membership of the POV's jump group) instead.";

export function jumpGroupName(pov: { id: string; name: string }): string {
  // Entitle resource names are 2–50 characters and Entitle names the resource after the group.
  return `${pov.name.slice(0, 40).trim() || 'POV'} ${pov.id.slice(0, 8)}`;
}

const message = (err: unknown) => toWireError(err).message;

/** Wires the POV into every tenant it has, step by step; what failed is in `problems` and on its row. */
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
          `Jumpoint ${j.name} (code_name ${tag}) is not a clustered linux-x86 Jumpoint, so it cannot run as a container; ` +
            'delete it in PRA and Wire again',
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
              error:
                `not connected ${Math.round(d.settings.connectTimeoutMs / 1000)} s after the container started; ` +
                "check the container's log on the control node and the image setting",
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
          'Entitle has no BeyondTrust PRA integration; ' +
            "add it in Entitle (Integrations → Add → BeyondTrust PRA) for this POV's PRA site, then Wire again",
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
