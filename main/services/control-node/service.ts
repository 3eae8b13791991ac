import { AppError } from '../../../shared/contract/errors';
import type { PovLocks } from '../pov/locks';
import type { StepContext } from '../pov/types';
import type { SavedSkytap } from '../skytap/saved';
import type { Db } from '../store/db';
import { requireBootstrapMechanism } from '../../../shared/lab-platforms';
import type { LabPlatform } from '../lab-platforms/platform';
import { SkytapPlatform } from '../lab-platforms/skytap';
import { AgentStore } from './agents';
import {
  CONTROL_PLANE_TOKEN_ACCOUNT,
  controlPlaneFrom,
  installSettingsGap,
  readConfig,
  saveConfig,
  type ControlNodeConfig,
  type KeyValue,
  type Secrets,
} from './config';
import type { ControlPlane } from './control-plane';
import { fitUserData } from './fit';
import {
  installControlNode,
  manualNetworkRefusal,
  refusalText,
  resolveFor,
  teardownControlNode,
  type InstallDeps,
  type InstallJob,
  type PovLookup,
  type SkytapUserData,
} from './install';
import { USER_DATA_LIMIT } from './markers';
import { buildBootstrap } from './payload';
import { controlNodeRow, dbPovLookup, hasRoleHostColumns, povName, setRoleHosts } from './pov-adapter';
import { RUNNER_PATH, UNIT_NAME, runnerScript } from './runner';
import type { Events } from '../hub';

export interface ControlNodeServiceDeps {
  db: Db;
  settings: KeyValue;
  secrets: Secrets;
  env: NodeJS.ProcessEnv;
  /** The POV job locks shared with the PovService (an install is tracked there). */
  locks: PovLocks;
  skytap: Pick<SavedSkytap, 'client'>;
  povs?: PovLookup;
  /** Defaults to the HTTP control plane from Settings → Control node. */
  controlPlane?: () => Promise<ControlPlane>;
  /** Defaults to the Skytap client from the saved settings. */
  userData?: (signal: AbortSignal) => Promise<SkytapUserData>;
  /** The Local lab platform: a local POV's user_data goes to its vm-manager's metadata service. */
  local?: LabPlatform;
  /** How often the install reads the agent's enrolment state (default 10 s). */
  enrolPollMs?: number;
  /** Where `pov.changed` goes when a POV's row changes outside a job (a name, the role hosts): `pov.updated` follows it. */
  hub: Pick<Events, 'emit'>;
}

/** The control node of each POV: its settings, resolution, install after power-on, and teardown. */
export class ControlNodeService {
  private readonly povs: PovLookup;

  constructor(private readonly d: ControlNodeServiceDeps) {
    this.povs = d.povs ?? dbPovLookup(d.db);
  }

  private controlPlane(): Promise<ControlPlane> {
    return (this.d.controlPlane ?? (() => controlPlaneFrom(this.d.settings, this.d.secrets, this.d.env)))();
  }

  private async userData(signal: AbortSignal, platform: string): Promise<SkytapUserData> {
    if (platform === 'local') {
      const local = this.d.local;
      if (!local) throw new AppError('unsupported', 'the local lab platform is not wired in this process');
      // The same bytes Skytap would get, through the vm-manager's user-data route (null clears).
      return {
        set: (envId, vmId, contents) => local.setUserData(envId, vmId, contents),
        clear: (envId, vmId) => local.setUserData(envId, vmId, null),
      };
    }
    if (this.d.userData) return this.d.userData(signal);
    const client = await this.d.skytap.client({ signal });
    // Clearing must work after a cancel too (it removes a live enrolment code), so it uses a
    // client not bound to the job's signal.
    const cleaner = await this.d.skytap.client();
    const writer = new SkytapPlatform(client);
    const clearer = new SkytapPlatform(cleaner);
    return {
      set: (envId, vmId, contents) => writer.setUserData(envId, vmId, contents),
      clear: (envId, vmId) => clearer.setUserData(envId, vmId, null),
    };
  }

  private async installDeps(signal: AbortSignal, platform: string): Promise<InstallDeps> {
    const config = readConfig(this.d.settings, this.d.env);
    const controlPlane = await this.controlPlane();
    return {
      povs: this.povs,
      userData: await this.userData(signal, platform),
      controlPlane,
      agents: new AgentStore(this.d.db),
      config,
      ...(this.d.enrolPollMs ? { enrolPollMs: this.d.enrolPollMs } : {}),
    };
  }

  private async run(povId: string, job: InstallJob) {
    let deps: InstallDeps;
    try {
      deps = await this.installDeps(job.signal, this.povs.getPov(povId)?.platform ?? 'skytap');
    } catch (err) {
      // Missing settings or credentials: the reason goes beside the Install control node button.
      this.povs.setControlNode(povId, { status: 'failed', reason: (err as Error).message });
      throw err;
    }
    return installControlNode(deps, povId, job);
  }

  /** Tracked with the POV's locks: Suspend is refused and Destroy cancels it first while it runs. */
  private startInstall(povId: string): string {
    return this.d.locks.startInstall(povId, `Install control node for POV "${povName(this.d.db, povId)}"`, (job) => this.run(povId, job));
  }

  /** What Settings → Control node lacks for an install, or null (installSettingsGap on the saved settings). */
  private settingsGap(): string | null {
    return installSettingsGap(readConfig(this.d.settings, this.d.env));
  }

  private summary(id: string) {
    const pov = this.povs.getPov(id);
    if (!pov) throw new AppError('not_found', `no POV ${id}; refresh the POV list`);
    return { pov, resolution: resolveFor(pov) };
  }

  /**
   * The provision's hook, run after power-on. It resolves at once (a refusal lands on the row and
   * in the provision's log), then hands the install to its own job: that job waits up to the
   * code's 15 minutes for the agent to enrol, which the provision should not, and its last line
   * says SPIRE or Ed25519. Nothing here can fail the provision (the lifecycle catches and records).
   */
  readonly installAfterPowerOn = async (povId: string, ctx: StepContext): Promise<void | 'not_set_up'> => {
    const pov = this.povs.getPov(povId);
    if (!pov) throw new AppError('not_found', `no POV ${povId}`);
    requireBootstrapMechanism(pov.platform ?? 'skytap', 'metadata');
    const r = resolveFor(pov);
    if ('refusal' in r) {
      const reason = refusalText(r);
      this.povs.setControlNode(povId, { vmId: null, status: 'none', reason });
      throw new AppError('conflict', reason);
    }
    this.refuseManualNetwork(povId, pov.vms.find((v) => v.id === r.vm.id) ?? r.vm);
    const gap = this.settingsGap();
    if (gap) {
      // Not a failure of the provision nor a job bound to fail: the row says what to enter.
      this.povs.setControlNode(povId, { vmId: r.vm.id, status: 'not_set_up', reason: gap });
      ctx.log(`control node ${r.vm.name}: not installed, ${gap}`);
      return 'not_set_up';
    }
    const jobId = this.startInstall(povId);
    ctx.log(`control node ${r.vm.name}: the install continues as job ${jobId} (it waits for the agent to enrol)`);
  };

  /**
   * Destroy revokes the POV's agents first; a failure is logged on the job and the row by the
   * lifecycle and never blocks the environment's destroy.
   */
  readonly teardown = async (povId: string, ctx: StepContext): Promise<void> => {
    const agents = new AgentStore(this.d.db);
    if (!agents.live(povId).length) return;
    const revoked = await teardownControlNode({ controlPlane: await this.controlPlane(), agents }, povId, ctx.signal);
    ctx.log(`revoked control node agent ${revoked.join(', ')} (and its SPIRE entries)`);
    this.povs.setControlNode(povId, { status: 'revoked', reason: null });
  };

  /** pov.installControlNode: refused while a lifecycle job runs, the environment is not running or Settings lack what it needs. */
  install(id: string): string {
    const { pov } = this.summary(id);
    // The install hands its payload over as metadata; a platform with another mechanism is refused here.
    requireBootstrapMechanism(pov.platform ?? 'skytap', 'metadata');
    if (this.d.locks.activeJob(id))
      throw new AppError('conflict', 'a lifecycle job is running for this POV; wait for it to finish, then press Install control node');
    if (pov.runstate !== 'running') {
      throw new AppError(
        'conflict',
        `the environment is ${pov.runstate ?? 'not confirmed running'}; start it first (the payload goes in only after power-on)`,
      );
    }
    const resolution = resolveFor(pov);
    if (!('refusal' in resolution)) this.refuseManualNetwork(id, pov.vms.find((v) => v.id === resolution.vm.id) ?? resolution.vm);
    const gap = this.settingsGap();
    if (gap) throw new AppError('unavailable', gap);
    return this.startInstall(id);
  }

  /** Before anything is minted or injected: a control node on a manual network is refused with the reason on its row. */
  private refuseManualNetwork(povId: string, vm: { id: string; name: string; networkType?: 'automatic' | 'manual' | null }): void {
    const reason = manualNetworkRefusal(vm);
    if (!reason) return;
    this.povs.setControlNode(povId, { vmId: vm.id, status: 'failed', reason });
    throw new AppError('conflict', reason);
  }

  runnerScript() {
    return { path: RUNNER_PATH, unitPath: `/etc/systemd/system/${UNIT_NAME}`, ...runnerScript() };
  }

  previewBootstrap(povId: string) {
    const { pov, resolution } = this.summary(povId);
    if ('refusal' in resolution) throw new AppError('conflict', refusalText(resolution));
    const cfg = readConfig(this.d.settings, this.d.env);
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
  }

  async getSettings() {
    const cfg = readConfig(this.d.settings, this.d.env);
    const token = this.d.env.POVDESK_CONTROL_PLANE_TOKEN || (await this.d.secrets.get(CONTROL_PLANE_TOKEN_ACCOUNT));
    return { ...cfg, tokenSet: Boolean(token) };
  }

  async saveSettings(patch: Partial<ControlNodeConfig>, token?: string) {
    saveConfig(this.d.settings, patch, this.d.env);
    if (token) await this.d.secrets.set(CONTROL_PLANE_TOKEN_ACCOUNT, token);
    return this.getSettings();
  }

  setName(id: string, name: string | null) {
    this.summary(id);
    this.povs.setControlNode(id, { name: name || null });
    return this.reresolve(id);
  }

  setRoleHosts(id: string, hosts: { entitleHost?: string | null | undefined; brokerHost?: string | null | undefined }) {
    this.summary(id);
    if (!hasRoleHostColumns(this.d.db)) {
      throw new AppError(
        'unavailable',
        'this database has no role-host columns yet (migration 5 has not run); restart POV Desk after updating it',
      );
    }
    setRoleHosts(this.d.db, id, hosts);
    return this.reresolve(id);
  }

  /**
   * Re-resolves after the name or the role hosts changed. A refusal lands on the row as `none`
   * with the reason (an enrolled agent keeps its status: it still runs until replaced); a VM that
   * differs from the enrolled one (or none installed yet) is recorded with no status, so the
   * Install control node button is what puts the agent there.
   */
  private reresolve(id: string) {
    const { resolution } = this.summary(id);
    const before = controlNodeRow(this.d.db, id);
    if ('refusal' in resolution) {
      this.povs.setControlNode(id, { status: before?.status === 'enrolled' ? 'enrolled' : 'none', reason: refusalText(resolution) });
    } else if (before?.vmId !== resolution.vm.id || before?.status !== 'enrolled') {
      this.povs.setControlNode(id, { vmId: resolution.vm.id, status: null, reason: null, mode: null });
    } else {
      this.povs.setControlNode(id, { reason: null });
    }
    this.d.hub.emit('pov.changed', { povId: id });
    return { ...controlNodeRow(this.d.db, id)!, resolvedVm: 'vm' in resolution ? resolution.vm.name : null };
  }
}
