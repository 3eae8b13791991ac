import { AppError } from '../../../shared/contract/errors';
import { sleep } from '../../lib/sleep';
import type { PamItem, PamProduct, PamStatus, PamTestResult } from '../../../shared/contract/pam';
import { CONTROL_PLANE_ENV, CONTROL_PLANE_TOKEN_ACCOUNT, readConfig, type KeyValue } from '../control-node/config';
import { JOB_KIND } from '../../../shared/contract/job-kinds';
import type { Events } from '../hub';
import type { JobContext, JobRunner } from '../jobs/runner';
import { getPov, listVms } from '../pov/repo';
import type { SecretStore } from '../secrets/store';
import type { Db } from '../store/db';
import { HttpAgentTasks, type AgentTasks } from './agent-tasks';
import { EntitleClient } from './entitle';
import type { HttpOptions } from './http';
import { PasswordSafeClient } from './password-safe';
import { PraClient } from './pra';
import { PamRepo, type ArtifactRow } from './repo';
import { Tenants } from './tenants';
import { testTenant } from './test-tenant';
import type { PamJob } from './types';
import { unwirePov } from './unwire';
import { ENTITLE_SSH_REASON, wirePov, type PamPov, type WireDeps, type WireSettings } from './wire';

export const BROKER_UNVERIFIED = 'broker: unverified — check the portal';

export interface PamServiceDeps {
  db: Db;
  jobs: JobRunner;
  secrets: SecretStore;
  settings: KeyValue;
  env: NodeJS.ProcessEnv;
  /** addSecret: the log's redaction list; every tenant secret is registered before it is used. */
  log: {
    addSecret(v: string): void;
    info(msg: string, f?: Record<string, unknown>): void;
    warn(msg: string, f?: Record<string, unknown>): void;
  };
  /** Where the service hears `job.changed`: a control node that enrolled gets wired (autoWire). */
  hub: Pick<Events, 'on'>;
  /** Tests: a quick sleep for Retry-After and the connect poll. */
  http?: HttpOptions;
  /** Defaults to the control plane of Settings → Control node (null when none is set). */
  agentTasks?: () => Promise<AgentTasks | null>;
  connectPollMs?: number;
  checkpoint?: (step: string) => void;
}

const SETTING = { image: 'pam.gatewayImage', args: 'pam.gatewayArgs', timeout: 'pam.connectTimeoutSec' } as const;

/** Wiring jobs per POV (one at a time), their status and the destroy hook. */
export class PamService {
  readonly repo: PamRepo;
  readonly tenants: Tenants;
  private readonly running = new Map<string, string>();

  constructor(private readonly d: PamServiceDeps) {
    this.repo = new PamRepo(d.db);
    this.tenants = new Tenants(this.repo, d.secrets, (v) => d.log.addSecret(v));
    // Once a POV's control node enrols, wire it (when its tenants are saved): the Gateway
    // container needs the agent. A failure stays on the wiring job, never on the install.
    d.hub.on('job.changed', (job) => {
      if (job.kind !== JOB_KIND.controlNodeInstall || job.state !== 'succeeded' || !job.subject) return;
      try {
        const id = this.autoWire(job.subject);
        if (id) d.log.info('wiring a POV into BeyondTrust now that its control node enrolled', { povId: job.subject, jobId: id });
      } catch (err) {
        d.log.warn('could not start the BeyondTrust wiring after enrolment', { povId: job.subject, error: (err as Error).message });
      }
    });
  }

  getSettings() {
    const args = this.d.settings.getValue(SETTING.args);
    return {
      gatewayImage: this.d.settings.getValue(SETTING.image) ?? '',
      gatewayArgs: args ? (JSON.parse(args) as string[]) : [],
      connectTimeoutSec: Number(this.d.settings.getValue(SETTING.timeout) ?? 300),
    };
  }

  saveSettings(p: { gatewayImage?: string | undefined; gatewayArgs?: string[] | undefined; connectTimeoutSec?: number | undefined }) {
    if (p.gatewayImage !== undefined) {
      if (p.gatewayImage && !/^[a-z0-9][a-z0-9._\-/:@]{0,510}$/i.test(p.gatewayImage))
        throw new AppError('invalid_request', 'the Jumpoint image must be an image reference (registry/name:tag)');
      this.d.settings.setValue(SETTING.image, p.gatewayImage);
    }
    if (p.gatewayArgs !== undefined) {
      const bad = p.gatewayArgs.find((a) => !a.startsWith('-') || /[\n\r\0]/.test(a));
      if (bad !== undefined)
        throw new AppError('invalid_request', `each Jumpoint container flag must start with "-" and be one line: ${JSON.stringify(bad)}`);
      this.d.settings.setValue(SETTING.args, JSON.stringify(p.gatewayArgs));
    }
    if (p.connectTimeoutSec !== undefined) this.d.settings.setValue(SETTING.timeout, String(p.connectTimeoutSec));
    return this.getSettings();
  }

  /** Saves a POV's tenants (refused for a POV that does not exist: nothing is written). */
  async saveTenants(args: Parameters<Tenants['save']>[0]) {
    this.pov(args.povId);
    await this.tenants.save(args);
    return this.tenants.view(args.povId);
  }

  private pov(povId: string): PamPov {
    const r = getPov(this.d.db, povId);
    if (!r) throw new AppError('not_found', `no POV ${povId}; refresh the POV list`);
    const agent = this.d.db
      .prepare(
        "SELECT agent_id FROM control_node_agents WHERE pov_id = ? AND state = 'enrolled' ORDER BY created_at DESC, rowid DESC LIMIT 1",
      )
      .get(povId) as { agent_id: string } | undefined;
    return {
      id: r.id,
      name: r.name,
      agentId: agent?.agent_id ?? null,
      brokerHost: r.broker_host ?? null,
      controlNodeVmId: r.control_node_vm_id,
      vms: listVms(this.d.db, povId)
        .filter((v) => v.gone_at === null)
        .map((v) => ({
          vmId: v.vm_id,
          name: v.name,
          os: v.os_override ?? v.os_platform,
          ip: v.ip,
          guestOs: v.guest_os,
          networkType: v.network_type ?? null,
          networkId: v.network_id ?? null,
          networkName: v.network_name ?? null,
        })),
    };
  }

  private async agentTasks(): Promise<AgentTasks | null> {
    if (this.d.agentTasks) return this.d.agentTasks();
    const url = readConfig(this.d.settings, this.d.env).controlPlaneUrl;
    const token = this.d.env[CONTROL_PLANE_ENV.token] || (await this.d.secrets.get(CONTROL_PLANE_TOKEN_ACCOUNT));
    return url && token ? new HttpAgentTasks(url, token, this.d.http) : null;
  }

  async wireDeps(povId: string, signal: AbortSignal): Promise<WireDeps> {
    const pov = this.pov(povId);
    const t = await this.tenants.resolve(povId);
    const http = { ...this.d.http, signal };
    const s = this.getSettings();
    const settings: WireSettings = {
      gatewayImage: s.gatewayImage,
      gatewayArgs: s.gatewayArgs,
      connectTimeoutMs: s.connectTimeoutSec * 1000,
      connectPollMs: this.d.connectPollMs ?? 5000,
    };
    return {
      repo: this.repo,
      pov,
      pra: t.pra ? new PraClient(t.pra, http) : null,
      ps: t.ps ? new PasswordSafeClient(t.ps, http) : null,
      entitle: t.entitle ? new EntitleClient(t.entitle, http) : null,
      agent: await this.agentTasks(),
      brokerInstallKey: t.brokerInstallKey,
      functionalAccounts: t.functionalAccounts,
      managedAccounts: t.managedAccounts,
      settings,
      sleep: this.d.http?.sleep ?? ((ms, sig) => sleep(ms, sig ?? signal)),
      ...(this.d.checkpoint ? { checkpoint: this.d.checkpoint } : {}),
    };
  }

  jobFor(povId: string): string | null {
    return this.running.get(povId) ?? null;
  }

  private launch(povId: string, op: 'wire' | 'unwire', work: (job: JobContext) => Promise<unknown>): string {
    const r = getPov(this.d.db, povId);
    if (!r) throw new AppError('not_found', `no POV ${povId}; refresh the POV list`);
    const busy = this.running.get(povId);
    if (busy)
      throw new AppError('conflict', `a wiring job is already running for this POV (job ${busy}); wait for it or cancel it in Jobs`);
    let jobId = '';
    const release = () => {
      if (this.running.get(povId) === jobId) this.running.delete(povId);
    };
    jobId = this.d.jobs.start(
      { kind: `pam.${op}`, title: `${op === 'wire' ? 'Wire' : 'Unwire'} POV "${r.name}" (BeyondTrust)`, subject: povId },
      async (job) => {
        this.repo.setRun(povId, op, 'running', job.id);
        try {
          const out = await work(job);
          this.repo.setRun(povId, op, 'succeeded', job.id);
          return out;
        } catch (err) {
          this.repo.setRun(povId, op, job.signal.aborted ? 'cancelled' : 'failed', job.id);
          throw err;
        } finally {
          release();
        }
      },
    );
    this.running.set(povId, jobId);
    void this.d.jobs.wait(jobId).then(release, release);
    return jobId;
  }

  startWire(povId: string): string {
    const r = getPov(this.d.db, povId);
    if (r && (r.state === 'destroyed' || r.state === 'destroying'))
      throw new AppError('conflict', `POV "${r.name}" is ${r.state}; there is nothing to wire`);
    return this.launch(povId, 'wire', async (job) => {
      const res = await wirePov(await this.wireDeps(povId, job.signal), job);
      if (res.problems.length)
        throw new AppError(
          'unavailable',
          `wired with ${res.problems.length} problem(s): ${res.problems.join(' | ')}; fix them and press Wire again (it finds what exists)`,
        );
      return res;
    });
  }

  /** After the control node enrols: wire when a PRA tenant is saved and nothing runs; else null. */
  autoWire(povId: string): string | null {
    if (!this.repo.tenants(povId)?.pra_site || this.running.has(povId)) return null;
    const r = getPov(this.d.db, povId);
    if (!r || r.state !== 'active') return null;
    return this.startWire(povId);
  }

  startUnwire(povId: string): string {
    return this.launch(povId, 'unwire', async (job) => unwirePov(await this.wireDeps(povId, job.signal), job));
  }

  /** The destroy hook: unwires inline (the destroy job is the job); never blocks the destroy. */
  async teardown(povId: string, job: PamJob): Promise<void> {
    const running = this.running.get(povId);
    if (running) {
      job.log(`cancelling the wiring job ${running} before unwiring`, 'warn');
      try {
        this.d.jobs.cancel(running);
      } catch {
        /* it finished meanwhile */
      }
      await this.d.jobs.wait(running);
    }
    if (!this.repo.tenants(povId) && this.repo.artifacts(povId).length === 0) return;
    this.repo.setRun(povId, 'unwire', 'running', null);
    try {
      const r = await unwirePov(await this.wireDeps(povId, job.signal), job);
      this.repo.setRun(povId, 'unwire', 'succeeded', null);
      job.log(r.removed.length ? `unwired from BeyondTrust: ${r.removed.join(', ')}` : 'nothing was wired in BeyondTrust');
      await this.tenants.forget(povId);
    } catch (err) {
      this.repo.setRun(povId, 'unwire', 'failed', null);
      throw err;
    }
  }

  async test(povId: string, product: PamProduct): Promise<PamTestResult> {
    this.pov(povId);
    return testTenant(product, await this.tenants.resolve(povId), this.d.http);
  }

  /** Wire/unwire runs a previous process left running: started again (each step finds before it creates). */
  resumeInterrupted(): string[] {
    const ids: string[] = [];
    for (const r of this.repo.interrupted()) {
      const pov = getPov(this.d.db, r.pov_id);
      if (this.running.has(r.pov_id) || !pov) continue;
      // A destroy resumes its own unwire (the lifecycle's hook); a wire of a POV going away is moot.
      if (pov.state === 'destroying' || pov.state === 'destroyed') {
        this.repo.setRun(r.pov_id, r.op, 'failed', null);
        continue;
      }
      try {
        ids.push(r.op === 'wire' ? this.startWire(r.pov_id) : this.startUnwire(r.pov_id));
      } catch {
        this.repo.setRun(r.pov_id, r.op, 'failed', null);
      }
    }
    return ids;
  }

  async status(povId: string): Promise<PamStatus> {
    const pov = this.pov(povId);
    const a = (kind: ArtifactRow['kind'], key = '') => this.repo.artifact(povId, kind, key);
    const item = (row: ArtifactRow | null): PamItem => ({
      state: row?.state ?? 'pending',
      id: row?.remote_id ?? null,
      detail: row?.detail ?? null,
      error: row?.error ?? null,
    });
    const jp = a('jumpoint');
    const gw = (() => {
      try {
        return JSON.parse(jp?.detail ?? '{}') as { connected?: boolean; node?: string | null };
      } catch {
        return {};
      }
    })();
    const broker = a('broker');
    const label =
      broker?.state === 'done'
        ? `broker: verified — ${broker.detail ?? ''}`
        : broker?.state === 'waiting'
          ? BROKER_UNVERIFIED
          : broker?.state === 'failed'
            ? `broker: failed — ${broker.error ?? ''}`
            : 'broker: not installed';
    const ent = a('entitle_resource');
    const run = this.repo.run(povId);
    return {
      povId,
      tenants: await this.tenants.view(povId),
      gateway: { ...item(jp), detail: null, connected: Boolean(gw.connected), node: gw.node ?? null },
      jumpGroup: item(a('jump_group')),
      workgroup: item(a('workgroup')),
      container: item(a('container')),
      broker: { ...item(broker), vm: broker?.detail?.split(';')[0] ?? null, label },
      entitle: { ...item(ent), sshIntegration: { enabled: false, reason: ENTITLE_SSH_REASON } },
      vms: pov.vms.map((v) => {
        const ji = a('jump_item', v.vmId);
        const asset = a('asset', v.vmId);
        const sys = a('managed_system', v.vmId);
        const ps = sys?.state === 'done' ? item(sys) : item(asset);
        return {
          vmId: v.vmId,
          name: v.name,
          os: v.os,
          ip: v.ip,
          jumpItem: { ...item(ji), type: ji?.detail === 'shell-jump' ? 'shell_jump' : ji?.detail === 'remote-rdp' ? 'remote_rdp' : null },
          passwordSafe: ps,
          entitle:
            ent?.state === 'done' && ji?.state === 'done'
              ? { ...item(ent), detail: `requestable through the jump group (${ent.detail ?? ''})` }
              : item(ent),
        };
      }),
      jobId: this.jobFor(povId),
      lastRun: run ? { op: run.op, state: run.state, at: run.at } : null,
    };
  }
}
