import { AppError } from '../../../shared/contract/errors';
import type { controlNodeMethods } from '../../../shared/contract/controlNode';
import type { povMethods } from '../../../shared/contract/pov';
import type { templatesMethods } from '../../../shared/contract/templates';
import { AgentStore } from '../../services/control-node/agents';
import {
  CONTROL_PLANE_TOKEN_ACCOUNT,
  controlPlaneFrom,
  readConfig,
  saveConfig,
  type ControlNodeConfig,
} from '../../services/control-node/config';
import type { ControlPlane } from '../../services/control-node/control-plane';
import { fitUserData } from '../../services/control-node/fit';
import {
  installControlNode,
  refusalText,
  teardownControlNode,
  resolveFor,
  type InstallDeps,
  type InstallJob,
  type PovLookup,
  type SkytapUserData,
} from '../../services/control-node/install';
import { USER_DATA_LIMIT } from '../../services/control-node/markers';
import { buildBootstrap } from '../../services/control-node/payload';
import { dbPovLookup } from '../../services/control-node/pov-adapter';
import { RUNNER_PATH, UNIT_NAME, runnerScript } from '../../services/control-node/runner';
import type { Base } from '../base';
import { povServiceFor } from './pov';
import { skytapClientFor, type DomainHandlers } from './skytap';

export interface ControlNodeWiring {
  povs?: PovLookup;
  /** Defaults to the HTTP control plane from Settings → Control node. */
  controlPlane?: () => Promise<ControlPlane>;
  /** Defaults to the Skytap client from the saved settings. */
  userData?: (signal: AbortSignal) => Promise<SkytapUserData>;
  enrolPollMs?: number;
}

/** Everything installControlNode needs, built from a Base (tests replace parts through `wiring`). */
export async function installDepsFor(base: Base, signal: AbortSignal, wiring: ControlNodeWiring = {}): Promise<InstallDeps> {
  const config = readConfig(base.settings, base.env);
  const controlPlane = await (wiring.controlPlane ?? (() => controlPlaneFrom(base.settings, base.secrets, base.env)))();
  const userData =
    (await wiring.userData?.(signal)) ??
    (await (async () => {
      const client = await skytapClientFor(base, { signal });
      // Clearing must work after a cancel too (it removes a live enrolment code), so it uses a
      // client not bound to the job's signal.
      const cleaner = await skytapClientFor(base);
      return {
        set: (envId: string, vmId: string, contents: string) => client.setVmUserData(envId, vmId, contents),
        clear: (envId: string, vmId: string) => cleaner.setVmUserData(envId, vmId, ''),
      };
    })());
  return {
    povs: wiring.povs ?? dbPovLookup(base.db),
    userData,
    controlPlane,
    agents: new AgentStore(base.db),
    config,
    ...(wiring.enrolPollMs ? { enrolPollMs: wiring.enrolPollMs } : {}),
  };
}

async function settingsView(base: Base, cfg: ControlNodeConfig) {
  const token = base.env.POVDESK_CONTROL_PLANE_TOKEN || (await base.secrets.get(CONTROL_PLANE_TOKEN_ACCOUNT));
  return { ...cfg, tokenSet: Boolean(token) };
}

export function controlNodeHandlers(base: Base, wiring: ControlNodeWiring = {}): DomainHandlers<typeof controlNodeMethods> &
  Pick<DomainHandlers<typeof povMethods>, 'pov.setControlNodeName' | 'pov.setRoleHosts' | 'pov.installControlNode'> &
  Pick<DomainHandlers<typeof templatesMethods>, 'templates.runnerScript'> {
  const povs = wiring.povs ?? dbPovLookup(base.db);
  const svc = povServiceFor(base);
  // The provision's hook: runs after power-on; whatever it throws lands on the row, never fails the POV.
  const run = async (povId: string, job: InstallJob) => {
    let deps: InstallDeps;
    try {
      deps = await installDepsFor(base, job.signal, { ...wiring, povs });
    } catch (err) {
      // Missing settings or credentials: the reason goes beside the Install control node button.
      povs.setControlNode(povId, { status: 'failed', reason: (err as Error).message });
      throw err;
    }
    return installControlNode(deps, povId, job);
  };
  const povName = (povId: string) =>
    (base.db.prepare('SELECT name FROM povs WHERE id = ?').get(povId) as { name: string } | undefined)?.name ?? povId;
  // Tracked by the PovService: Suspend is refused and Destroy cancels it first while it runs.
  const startInstall = (povId: string) => svc.startInstall(povId, `Install control node for POV "${povName(povId)}"`, (job) => run(povId, job));

  // Destroy revokes the POV's agents first; a failure is logged on the job and the row by the
  // lifecycle and never blocks the environment's destroy.
  svc.setControlNodeTeardown(async (povId, ctx) => {
    const agents = new AgentStore(base.db);
    const live = agents.live(povId);
    if (!live.length) return;
    const controlPlane = await (wiring.controlPlane ?? (() => controlPlaneFrom(base.settings, base.secrets, base.env)))();
    const revoked = await teardownControlNode({ controlPlane, agents }, povId, ctx.signal);
    ctx.log(`revoked control node agent ${revoked.join(', ')} (and its SPIRE entries)`);
    povs.setControlNode(povId, { status: 'revoked', reason: null });
  });

  // The provision's hook, run after power-on. It resolves at once (a refusal lands on the row and
  // in the provision's log), then hands the install to its own job: that job waits up to the
  // code's 15 minutes for the agent to enrol, which the provision should not, and its last line
  // says SPIRE or Ed25519. Nothing here can fail the provision (the lifecycle catches and records).
  svc.setControlNodeInstaller(async (povId, ctx) => {
    const pov = povs.getPov(povId);
    if (!pov) throw new AppError('not_found', `no POV ${povId}`);
    const r = resolveFor(pov);
    if ('refusal' in r) {
      const reason = refusalText(r);
      povs.setControlNode(povId, { vmId: null, status: 'none', reason });
      throw new AppError('conflict', reason);
    }
    const jobId = startInstall(povId);
    ctx.log(`control node ${r.vm.name}: the install continues as job ${jobId} (it waits for the agent to enrol)`);
  });

  const summary = (id: string) => {
    const pov = povs.getPov(id);
    if (!pov) throw new AppError('not_found', `no POV ${id}; refresh the POV list`);
    const r = resolveFor(pov);
    return { pov, resolution: r };
  };

  const hasRoleHostColumns = () =>
    (base.db.prepare("SELECT COUNT(*) AS n FROM pragma_table_info('povs') WHERE name IN ('entitle_host','broker_host')").get() as { n: number }).n === 2;

  /**
   * Re-resolves after the name or the role hosts changed. A refusal lands on the row as `none`
   * with the reason (an enrolled agent keeps its status: it still runs until replaced); a VM that
   * differs from the enrolled one (or none installed yet) is recorded with no status, so the
   * Install control node button is what puts the agent there.
   */
  const reresolve = (id: string) => {
    const { resolution } = summary(id);
    const before = base.db.prepare('SELECT control_node_vm_id AS vmId, control_node_status AS status FROM povs WHERE id = ?').get(id) as
      | { vmId: string | null; status: string | null }
      | undefined;
    if ('refusal' in resolution) {
      povs.setControlNode(id, { status: before?.status === 'enrolled' ? 'enrolled' : 'none', reason: refusalText(resolution) });
    } else if (before?.vmId !== resolution.vm.id || before?.status !== 'enrolled') {
      povs.setControlNode(id, { vmId: resolution.vm.id, status: null, reason: null, mode: null });
    } else {
      povs.setControlNode(id, { reason: null });
    }
    const roles = hasRoleHostColumns() ? ', entitle_host AS entitleHost, broker_host AS brokerHost' : '';
    const row = base.db
      .prepare(`SELECT control_node_name AS name, control_node_vm_id AS vmId, control_node_status AS status, control_node_reason AS reason, control_node_mode AS mode${roles} FROM povs WHERE id = ?`)
      .get(id) as { name: string | null; vmId: string | null; status: string | null; reason: string | null; mode: string | null; entitleHost?: string | null; brokerHost?: string | null };
    return { ...row, resolvedVm: 'vm' in resolution ? resolution.vm.name : null };
  };

  return {
    'templates.runnerScript': async () => {
      const r = runnerScript();
      return { path: RUNNER_PATH, unitPath: `/etc/systemd/system/${UNIT_NAME}`, ...r };
    },

    'controlNode.previewBootstrap': async ({ povId }) => {
      const { pov, resolution } = summary(povId);
      if ('refusal' in resolution) throw new AppError('conflict', refusalText(resolution));
      const cfg = readConfig(base.settings, base.env);
      const boot = buildBootstrap({
        povId,
        agentId: 'preview',
        controlNodeName: resolution.vm.name,
        vms: pov.vms.filter((v) => v.ip).map((v) => ({ name: v.name, ip: v.ip! })),
        // A placeholder as long as a real code, so the size is honest; it enrols nothing.
        enrolmentCode: 'PREVIEW-NOT-A-CODE-000000000000000000',
        agentImage: cfg.agentImage || 'agent-image-not-set',
        controlPlaneUrl: cfg.agentUrl || cfg.controlPlaneUrl || 'https://control-plane-not-set.invalid',
      });
      const fitted = fitUserData(boot.script);
      return {
        vm: resolution.vm.name,
        script: boot.script,
        policy: boot.policy,
        tier: fitted.tier,
        chars: fitted.chars,
        originalChars: fitted.originalChars,
        limit: USER_DATA_LIMIT,
      };
    },

    'controlNode.getSettings': async () => settingsView(base, readConfig(base.settings, base.env)),

    'controlNode.saveSettings': async ({ token, ...rest }) => {
      const patch = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<ControlNodeConfig>;
      saveConfig(base.settings, patch, base.env);
      if (token) await base.secrets.set(CONTROL_PLANE_TOKEN_ACCOUNT, token);
      return settingsView(base, readConfig(base.settings, base.env));
    },

    'pov.setControlNodeName': async ({ id, name }) => {
      summary(id);
      povs.setControlNode(id, { name: name || null });
      return { controlNode: reresolve(id) };
    },

    'pov.setRoleHosts': async ({ id, entitleHost, brokerHost }) => {
      summary(id);
      if (!hasRoleHostColumns()) {
        throw new AppError('unavailable', 'this database has no role-host columns yet (migration 5 has not run); restart POV Desk after updating it');
      }
      const sets: string[] = [];
      const vals: Record<string, string | null> = { id };
      if (entitleHost !== undefined) {
        sets.push('entitle_host = @entitle');
        vals.entitle = entitleHost || null;
      }
      if (brokerHost !== undefined) {
        sets.push('broker_host = @broker');
        vals.broker = brokerHost || null;
      }
      if (sets.length) base.db.prepare(`UPDATE povs SET ${sets.join(', ')}, updated_at = @at WHERE id = @id`).run({ ...vals, at: new Date().toISOString() });
      return { controlNode: reresolve(id) };
    },

    'pov.installControlNode': async ({ id }) => {
      const { pov } = summary(id);
      if (svc.activeJob(id)) throw new AppError('conflict', 'a lifecycle job is running for this POV; wait for it to finish, then press Install control node');
      if (pov.runstate !== 'running') {
        throw new AppError('conflict', `the environment is ${pov.runstate ?? 'not confirmed running'}; start it first (the payload goes in only after power-on)`);
      }
      return { jobId: startInstall(id) };
    },
  };
}
