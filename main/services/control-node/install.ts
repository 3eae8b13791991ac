import { AppError } from '../../../shared/contract/errors';
import { sleep } from '../../lib/sleep';
import type { JobContext } from '../jobs/runner';
import type { AgentStore } from './agents';
import { installSettingsGap, type ControlNodeConfig } from './config';
import type { ControlPlane } from './control-plane';
import { fitUserData, type Tier } from './fit';
import { USER_DATA_LIMIT } from './markers';
import { buildBootstrap, type SpireBootstrap } from './payload';
import { resolveControlNode, type GuestOs, type Resolution } from './resolve';
import { checkSpireServer, type SpireCheck, type SpireCheckInput } from './spire-check';

/** What the control-node work needs to know about a POV (the POV service provides it). */
export interface ControlNodePov {
  id: string;
  /** The lab platform the POV runs on (default 'skytap'). */
  platform?: string;
  envId: string | null;
  /** Skytap's runstate as last confirmed: the payload goes in only when 'running'. */
  runstate: string | null;
  /** The name the user typed ("name VM"), if any. */
  controlNodeName: string | null;
  /** The VM that is already the enrolled control node, if any. */
  enrolledVmId: string | null;
  vms: {
    id: string;
    name: string;
    os: GuestOs;
    ip: string | null;
    roles?: string[];
    /** What the platform reports of the VM's network (null or absent: not reported). */
    networkType?: 'automatic' | 'manual' | null;
  }[];
  entitleHostName?: string | null;
  brokerHostName?: string | null;
}

/** not_set_up: Settings → Control node lacks what an install needs (installSettingsGap). */
export type ControlNodeStatus = 'none' | 'not_set_up' | 'installing' | 'waiting' | 'enrolled' | 'failed' | 'revoked';

/** The control_node_* columns of the POV row (what the POV list shows). */
export interface ControlNodePatch {
  name?: string | null;
  vmId?: string | null;
  status?: ControlNodeStatus | null;
  reason?: string | null;
  mode?: 'spire' | 'ed25519' | null;
}

export interface PovLookup {
  getPov(id: string): ControlNodePov | null;
  setControlNode(id: string, patch: ControlNodePatch): void;
}

/** Skytap's per-VM user_data (SkytapClient.setVmUserData). */
export interface SkytapUserData {
  set(envId: string, vmId: string, contents: string, signal?: AbortSignal): Promise<void>;
  clear(envId: string, vmId: string, signal?: AbortSignal): Promise<void>;
}

/** What the install needs of its job: a JobContext without the id. */
export type InstallJob = Pick<JobContext, 'signal' | 'progress' | 'log'>;

export interface InstallDeps {
  povs: PovLookup;
  userData: SkytapUserData;
  controlPlane: ControlPlane;
  agents: AgentStore;
  config: ControlNodeConfig;
  checkSpire?: (input: SpireCheckInput) => Promise<SpireCheck>;
  now?: () => Date;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** How often to read the agent's enrolment state (default 10 s). */
  enrolPollMs?: number;
}

export interface InstallResult {
  vm: string;
  vmId: string;
  agentId: string;
  attestation: 'spire' | 'ed25519';
  tier: Tier;
  chars: number;
}

const TIER_WORDS: Record<Tier, string> = { 1: 'as written', 2: 'with comment lines removed', 3: 'gzip + base64 compressed' };

/** The abortable sleep, with the install's own words when it is cancelled. */
function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal).catch(() => {
    throw new AppError('cancelled', 'the control-node install was cancelled');
  });
}

/** Resolution for a POV as the POV list shows it. */
export function resolveFor(pov: ControlNodePov): Resolution {
  return resolveControlNode({
    typedName: pov.controlNodeName,
    enrolledVmId: pov.enrolledVmId,
    vms: pov.vms,
    entitleHostName: pov.entitleHostName ?? null,
    brokerHostName: pov.brokerHostName ?? null,
  });
}

/**
 * The seed's reason for refusing a control node on a manual network, or null. Skytap's metadata
 * service answers only on automatic networks: on a manual one the guest never sees user_data,
 * which looks exactly like a missing runner after a 15-minute wait. Not reported is not refused.
 */
export function manualNetworkRefusal(vm: { name: string; networkType?: 'automatic' | 'manual' | null }): string | null {
  if (vm.networkType !== 'manual') return null;
  return (
    `${vm.name} is on a manual network: Skytap's metadata service answers only on VMs attached to an automatic network, ` +
    'so the guest would get no user_data at all, which looks exactly like a missing runner. ' +
    'Attach it to an automatic network in Skytap (or the template), then press Refresh VMs and Install control node'
  );
}

export function refusalText(r: Extract<Resolution, { refusal: unknown }>): string {
  const c = r.refusal.candidates;
  return c.length ? `${r.refusal.reason} (candidates: ${c.join(', ')})` : r.refusal.reason;
}

/**
 * Installs the agent on a POV's control node. Ordering rules (docs/control-node.md):
 * - only after power-on: a code lives 15 minutes and a first boot is unbounded;
 * - user_data is cleared once the agent enrols (and when the wait ends without it);
 * - every failure is recorded on the POV row's control-node reason (never its error message)
 *   and thrown, so a provision that calls this can log it and carry on;
 * - the job's last line says SPIRE or Ed25519.
 */
export async function installControlNode(deps: InstallDeps, povId: string, job: InstallJob): Promise<InstallResult> {
  const now = () => deps.now?.() ?? new Date();
  const sleep = deps.sleep ?? defaultSleep;
  const fail = (code: ConstructorParameters<typeof AppError>[0], reason: string, status: ControlNodeStatus = 'failed'): never => {
    deps.povs.setControlNode(povId, { status, reason });
    throw new AppError(code, reason);
  };

  const pov = deps.povs.getPov(povId);
  if (!pov) throw new AppError('not_found', `no POV ${povId}; refresh the POV list`);
  if (!pov.envId) fail('conflict', 'the POV has no Skytap environment yet; provision it first');
  if (pov.runstate !== 'running') {
    fail(
      'conflict',
      `the environment is ${pov.runstate ?? 'not confirmed running'}; start it, then press Install control node (the payload goes ` +
        `in only after power-on)`,
    );
  }
  const envId = pov.envId!;

  job.progress('resolve control node', 0.05);
  const resolution = resolveFor(pov);
  if ('refusal' in resolution) {
    deps.povs.setControlNode(povId, { vmId: null });
    return fail('conflict', refusalText(resolution), 'none');
  }
  const vm = resolution.vm;
  const manual = manualNetworkRefusal(pov.vms.find((v) => v.id === vm.id) ?? vm);
  if (manual) {
    deps.povs.setControlNode(povId, { vmId: vm.id });
    return fail('conflict', manual);
  }
  const how =
    resolution.step === 'typed'
      ? 'the name you gave'
      : resolution.step === 'enrolled'
        ? 'already the control node'
        : resolution.step === 'only-linux'
          ? 'the only Linux VM'
          : 'the VM called broker';
  job.log(`control node: ${vm.name} (${how})`);
  deps.povs.setControlNode(povId, { vmId: vm.id, status: 'installing', reason: null, mode: null });

  const cfg = deps.config;
  const gap = installSettingsGap(cfg);
  if (gap) fail('unavailable', gap, 'not_set_up');
  const agentUrl = cfg.agentUrl || cfg.controlPlaneUrl;

  // SPIRE: offered only when enabled, the control plane runs one, and its address checks out.
  let spireInfo: { trustDomain: string; serverAddress: string; trustBundle: string } | null = null;
  if (cfg.spireEnabled) {
    job.progress('check SPIRE', 0.1);
    try {
      const info = await deps.controlPlane.spire(job.signal);
      if (!info) {
        job.log('SPIRE is enabled in Settings but the control plane runs no SPIRE server; using an Ed25519 enrolment code', 'warn');
      } else {
        // Settings → Control node may override what the control plane says (blank = its own).
        const address = cfg.spireAddress || info.serverAddress;
        const trustDomain = cfg.spireTrustDomain || info.trustDomain;
        const trustBundle = cfg.spireTrustBundle || info.trustBundle;
        const check = await (deps.checkSpire ?? checkSpireServer)({ address, trustDomain, trustBundle });
        if (check.offered) {
          job.log(check.message);
          spireInfo = { trustDomain, trustBundle, serverAddress: address };
        } else {
          job.log(`SPIRE not offered: ${check.message}`, 'warn');
        }
      }
    } catch (err) {
      if (job.signal.aborted) throw err;
      job.log(`SPIRE not offered: ${(err as Error).message}`, 'warn');
    }
  }

  // A new install replaces the previous agent: revoke what this POV minted before.
  for (const old of deps.agents.live(povId)) {
    try {
      await deps.controlPlane.revoke(old.agent_id, job.signal);
      deps.agents.update(old.agent_id, { state: 'revoked', revoked_at: now().toISOString() });
      job.log(`revoked the previous agent ${old.agent_id}`);
    } catch (err) {
      if (job.signal.aborted) throw err;
      job.log(`could not revoke the previous agent ${old.agent_id}: ${(err as Error).message}`, 'warn');
    }
  }

  job.progress('mint enrolment code', 0.2);
  let code;
  try {
    code = await deps.controlPlane.mintEnrolmentCode(povId, job.signal);
  } catch (err) {
    return fail(err instanceof AppError ? err.code : 'unavailable', `could not mint an enrolment code: ${(err as Error).message}`);
  }
  deps.agents.insert({
    agent_id: code.agentId,
    pov_id: povId,
    env_id: envId,
    vm_id: vm.id,
    expires_at: code.expiresAt,
    created_at: now().toISOString(),
  });

  let injected = false;
  let cleared = false;
  const clear = async (why: string) => {
    try {
      await deps.userData.clear(envId, vm.id, job.signal.aborted ? undefined : job.signal);
      cleared = true;
      deps.agents.update(code.agentId, { cleared_at: now().toISOString() });
      job.log(`cleared user_data on ${vm.name} (${why})`);
    } catch (err) {
      job.log(
        `could not clear user_data on ${vm.name}: ${(err as Error).message}; clear it in Skytap (it holds a spent enrolment code)`,
        'warn',
      );
    }
  };
  const giveUp = async (codeName: ConstructorParameters<typeof AppError>[0], reason: string): Promise<never> => {
    deps.agents.update(code.agentId, { state: 'failed', reason });
    try {
      await deps.controlPlane.revoke(code.agentId);
      deps.agents.update(code.agentId, { state: 'revoked', revoked_at: now().toISOString() });
    } catch {
      /* left live: teardown or the next install revokes it */
    }
    return fail(codeName, reason);
  };

  try {
    let spire: SpireBootstrap | null = null;
    if (spireInfo) {
      try {
        const jt = await deps.controlPlane.mintJoinToken(code.agentId, job.signal);
        spire = {
          trustDomain: spireInfo.trustDomain,
          serverAddress: spireInfo.serverAddress,
          trustBundle: spireInfo.trustBundle,
          joinToken: jt.token,
          spireAgentImage: cfg.spireAgentImage,
          spiffeHelperImage: cfg.spiffeHelperImage,
        };
        job.log(`minted a SPIRE join token for ${jt.spiffeId}`);
      } catch (err) {
        if (job.signal.aborted) throw err;
        job.log(`SPIRE not offered: could not mint a join token: ${(err as Error).message}`, 'warn');
      }
    }

    job.progress('build payload', 0.3);
    const withIp = pov.vms.filter((v) => v.ip);
    const noIp = pov.vms.filter((v) => !v.ip);
    if (noIp.length)
      job.log(`no IP address yet for ${noIp.map((v) => v.name).join(', ')}: not in the policy; re-install once they have one`, 'warn');
    let fitted;
    let planned: 'spire' | 'ed25519';
    try {
      const boot = buildBootstrap({
        povId,
        agentId: code.agentId,
        controlNodeName: vm.name,
        vms: withIp.map((v) => ({ name: v.name, ip: v.ip! })),
        enrolmentCode: code.code,
        agentImage: cfg.agentImage,
        controlPlaneUrl: agentUrl,
        spire,
      });
      planned = boot.attestationPlanned;
      fitted = fitUserData(boot.script);
    } catch (err) {
      return await giveUp(err instanceof AppError ? err.code : 'internal', (err as Error).message);
    }
    if (fitted.tier > 1) {
      job.log(
        `the bootstrap is ${fitted.originalChars} characters; sent ${TIER_WORDS[fitted.tier]} ` +
          `(tier ${fitted.tier}): ${fitted.chars} of ${USER_DATA_LIMIT}`,
      );
    } else {
      job.log(`the bootstrap is ${fitted.chars} of ${USER_DATA_LIMIT} characters, sent as written (tier 1)`);
    }

    job.progress('inject user_data', 0.4);
    try {
      await deps.userData.set(envId, vm.id, fitted.contents, job.signal);
    } catch (err) {
      if (job.signal.aborted) throw err;
      return await giveUp(
        err instanceof AppError ? err.code : 'unavailable',
        `could not write user_data on ${vm.name}: ${(err as Error).message}`,
      );
    }
    injected = true;
    deps.agents.update(code.agentId, { state: 'injected', injected_at: now().toISOString(), tier: fitted.tier, chars: fitted.chars });
    deps.povs.setControlNode(povId, { status: 'waiting', reason: null });

    job.progress('wait for enrolment', 0.5, `the template runner on ${vm.name} polls every 20 s`);
    const deadline = Date.parse(code.expiresAt);
    const poll = deps.enrolPollMs ?? 10_000;
    for (;;) {
      let state;
      try {
        state = await deps.controlPlane.enrolmentState(code.agentId, job.signal);
      } catch (err) {
        if (job.signal.aborted) throw err;
        job.log(`could not read enrolment state: ${(err as Error).message}; retrying`, 'warn');
        state = null;
      }
      if (state?.state === 'enrolled') {
        const mode = state.attestation ?? planned;
        deps.agents.update(code.agentId, { state: 'enrolled', enrolled_at: state.enrolledAt ?? now().toISOString(), attestation: mode });
        await clear('the agent enrolled');
        deps.povs.setControlNode(povId, { status: 'enrolled', reason: null, mode });
        if (planned === 'spire' && mode === 'ed25519') {
          job.log(
            `expected SPIRE but the agent fell back to Ed25519: ${vm.name} could not reach the SPIRE server address for agents ` +
              `over plain TCP`,
            'warn',
          );
        }
        job.progress('done', 1);
        job.log(`control node ${vm.name} enrolled: ${mode === 'spire' ? 'SPIRE' : 'Ed25519'}`);
        return { vm: vm.name, vmId: vm.id, agentId: code.agentId, attestation: mode, tier: fitted.tier, chars: fitted.chars };
      }
      if (state?.state === 'revoked') {
        await clear('the agent was revoked');
        return await giveUp(
          'conflict',
          `agent ${code.agentId} was revoked while ${vm.name} was enrolling; press Install control node to start again`,
        );
      }
      if (state?.state === 'expired' || now().getTime() >= deadline) {
        await clear('the enrolment code expired');
        deps.agents.update(code.agentId, { state: 'expired' });
        return await giveUp(
          'timeout',
          `the agent on ${vm.name} did not enrol before its code expired (15 minutes); check that the template runs ` +
            'dashboard-bootstrap-runner (POV → Templates) and that the VM is on an automatic network, then press Install control node',
        );
      }
      await sleep(Math.min(poll, Math.max(0, deadline - now().getTime())), job.signal);
    }
  } catch (err) {
    if (job.signal.aborted && !(err instanceof AppError && err.code !== 'cancelled')) {
      // Cancelled mid-way: say so on the row and forget the agent (its code is being cleared below).
      deps.povs.setControlNode(povId, {
        status: 'failed',
        reason: 'the control-node install was cancelled; press Install control node to start again',
      });
      deps.agents.update(code.agentId, { state: 'failed', reason: 'cancelled' });
      try {
        await deps.controlPlane.revoke(code.agentId);
        deps.agents.update(code.agentId, { state: 'revoked', revoked_at: now().toISOString() });
      } catch {
        /* left live: teardown or the next install revokes it */
      }
    }
    throw err;
  } finally {
    if (injected && !cleared) await clear('the install stopped');
  }
}

/**
 * Teardown: revoke every live agent of a POV (and with it its SPIRE entries). Tries each agent;
 * the ones that could not be revoked stay live (a later teardown or install retries them) and are
 * named in the error thrown at the end.
 */
export async function teardownControlNode(
  deps: Pick<InstallDeps, 'controlPlane' | 'agents' | 'now'>,
  povId: string,
  signal?: AbortSignal,
): Promise<string[]> {
  const done: string[] = [];
  const failed: string[] = [];
  for (const a of deps.agents.live(povId)) {
    try {
      await deps.controlPlane.revoke(a.agent_id, signal);
      deps.agents.update(a.agent_id, { state: 'revoked', revoked_at: (deps.now?.() ?? new Date()).toISOString() });
      done.push(a.agent_id);
    } catch (err) {
      if (signal?.aborted) throw err;
      failed.push(`${a.agent_id} (${(err as Error).message})`);
    }
  }
  if (failed.length) {
    throw new AppError('unavailable', `agent ${failed.join('; ')} was not revoked${done.length ? ` (revoked: ${done.join(', ')})` : ''}`);
  }
  return done;
}
