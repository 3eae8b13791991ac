/**
 * The app's side of the vm-manager: which manager (the local one, started and reattached by the
 * supervisor, or a cluster's with a static token or an OIDC login, see ./remote), calls mapped to
 * AppErrors, the create job that follows a VM to its milestone by polling (./create-job), the image
 * jobs (./images), console following, exec, and guest ports forwarded to this machine.
 */
import { existsSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { checkCredentialUrl } from '../../../shared/url-policy';
import {
  type VmAttestation,
  type VmConnection,
  type VmCreateArgs,
  type VmExecResult,
  type VmForward,
  type VmHost,
  type VmImage,
  type VmLearnedGolden,
  type VmLogin,
  type VmRecord,
} from '../../../shared/contract/vm';
import type { Hub } from '../hub';
import { VmManagerClient, type Loose } from '../../vm-api/client';
import type { ApiVm } from '../../vm-api/schemas';
import type { JobRunner } from '../jobs/runner';
import type { Logger } from '../log/logger';
import type { SecretStore } from '../secrets/store';
import type { SettingsService } from '../settings/settings';
import { startCreateJob, type ManagerCalls } from './create-job';
import { managerCall } from './errors';
import { ConsoleFollowers, type FollowOptions } from './follow';
import { ForwardRelays } from './forwards';
import { remakeReferences, saveGolden, startBuildTestImage, startLearnGolden } from './images';
import {
  caBundle,
  connectionView,
  KEYS,
  OIDC_ACCOUNT,
  relogin,
  remoteBearer,
  REMOTE_TOKEN_ACCOUNT,
  saveConnection,
  startLogin,
  type ConnectionArgs,
} from './remote';
import type { LocalManagerSupervisor } from './supervisor';
import { VmUpdates } from './updates';
import { pretrustedHostKey, vmSshSignIn, type VmSshSignIn } from './local-ssh';
import { attestationView, hostView, imagePolicy, imageRef, imageView, serialSocket, vmView } from './views';
import { LIVE_VM_STATES } from '../../../shared/vm-states';

export { REMOTE_TOKEN_ACCOUNT };

export interface ConnectedVmManagerOptions {
  settings: Pick<SettingsService, 'getValue' | 'setValue'>;
  secrets: SecretStore;
  jobs: JobRunner;
  hub: Hub;
  log: Logger;
  supervisor: LocalManagerSupervisor;
  /** how often the create job re-reads the VM (default 500 ms) */
  pollMs?: number;
  follow?: FollowOptions;
  /** OIDC scope of the device login (default: openid offline_access) */
  oidcScope?: string;
  /** how often the manager's list is re-read while anyone follows vm.updated (default 2000 ms) */
  watchMs?: number;
}

interface Target {
  client: VmManagerClient;
  mode: 'local' | 'remote';
  url: string;
}

/**
 * The app's side of the vm.* methods: its connection to one vm-manager (the local one this app
 * starts, or a remote one) and what the app keeps about it (jobs, console followers, forwards,
 * vm.updated). Not the daemon's `VmService` (main/vm-manager/vms.ts), which owns the VMs' processes.
 */
export class ConnectedVmManager {
  readonly followers: ConsoleFollowers;
  readonly forwards = new ForwardRelays();
  private readonly updates: VmUpdates;
  /** What the create and image jobs call (./create-job, ./images). */
  private readonly calls: ManagerCalls = {
    call: <T>(what: string, fn: (c: VmManagerClient) => Promise<T>) => this.call(what, fn),
    raw: (id) => this.raw(id),
    view: (v) => this.view(v),
    delete: (id) => this.delete(id),
    saw: (vm) => this.updates.saw(vm),
  };

  constructor(private readonly o: ConnectedVmManagerOptions) {
    this.followers = new ConsoleFollowers(o.hub, o.follow);
    this.updates = new VmUpdates(o.hub, () => Promise.all([this.list(), this.images()]), o.watchMs);
  }

  mode(): 'local' | 'remote' {
    return this.o.settings.getValue(KEYS.mode) === 'remote' ? 'remote' : 'local';
  }

  private auth(): 'token' | 'oidc' {
    return this.o.settings.getValue(KEYS.auth) === 'oidc' ? 'oidc' : 'token';
  }

  connection(): Promise<VmConnection> {
    return connectionView(this.o, this.mode(), this.o.supervisor);
  }

  async setConnection(args: ConnectionArgs): Promise<VmConnection> {
    await saveConnection(this.o, args);
    return this.connection();
  }

  /** Starts the device-code login; the job ends when the person approved it at the issuer. */
  login(): Promise<VmLogin> {
    return startLogin(this.o, this.o.jobs, this.o.oidcScope ?? 'openid offline_access');
  }

  async logout(): Promise<void> {
    await this.o.secrets.delete(OIDC_ACCOUNT);
    this.o.log.info('vm-manager login forgotten');
  }

  /** The manager to talk to; the local one is started or reattached on first use. */
  async target(): Promise<Target> {
    if (this.mode() === 'remote') {
      const url = this.o.settings.getValue(KEYS.url);
      if (!url)
        throw new AppError(
          'unauthorized',
          'the remote vm-manager has no URL saved: set it on the Local VMs page (Connection), or switch back to the local manager',
        );
      checkCredentialUrl('the remote vm-manager URL', url, 'set an https:// URL on the Local VMs page (Connection)');
      return {
        client: new VmManagerClient(url, await remoteBearer(this.o), { timeoutMs: 60_000, ca: caBundle(this.o.settings) }),
        mode: 'remote',
        url,
      };
    }
    const ep = await this.o.supervisor.ensure();
    this.o.log.addSecret(ep.token);
    return { client: new VmManagerClient(ep.url, ep.token, 60_000), mode: 'local', url: ep.url };
  }

  /** One call; if the local manager is gone (unavailable), check the endpoint again and retry once. */
  private async call<T>(what: string, fn: (c: VmManagerClient, t: Target) => Promise<T>): Promise<T> {
    const t = await this.target();
    try {
      return await managerCall(what, () => fn(t.client, t));
    } catch (e) {
      const err = e as AppError;
      if (
        t.mode === 'remote' &&
        err.code === 'unauthorized' &&
        this.auth() === 'oidc' &&
        !(err.detail as { relogin?: boolean } | undefined)?.relogin
      ) {
        throw relogin(`the vm-manager refused the login (${err.message})`);
      }
      if (t.mode !== 'local' || err.code !== 'unavailable' || !/cannot reach/.test(err.message)) throw e;
      this.o.supervisor.reset();
      const again = await this.target();
      return managerCall(what, () => fn(again.client, again));
    }
  }

  /**
   * The manager's host report. When the local manager cannot start (this host lacks QEMU, swtpm or
   * OVMF), the app makes the same report itself, so the page can list what is missing.
   */
  async host(recheck = false): Promise<VmHost> {
    if (recheck && this.mode() === 'local') {
      this.o.supervisor.reset();
      await this.o.supervisor.ensure(true).catch(() => undefined);
    }
    try {
      return await this.call('GET /host', async (c, t) => hostView(await c.host(), t.url, t.mode));
    } catch (e) {
      const failure = this.mode() === 'local' ? this.o.supervisor.lastStartFailure() : null;
      if (!failure) throw e;
      const { hostReport } = await import('../../vm-manager/host');
      return hostView({ ...(await hostReport()) }, 'not running', 'local', failure.message);
    }
  }

  async images(): Promise<VmImage[]> {
    const images = await this.call('GET /images', async (c) => {
      const all = await c.images();
      return all.map((i) => imageView(i, all));
    });
    this.updates.sawImages(images);
    return images;
  }

  async list(): Promise<VmRecord[]> {
    const remote = this.mode() === 'remote';
    const vms = await this.call('GET /vms', async (c) => (await c.list()).map((v) => this.view(v, remote)));
    this.updates.sawAll(vms);
    this.updates.watch();
    return vms;
  }

  /** The contract's view; a remote manager's forwarded ports are on its loopback, not this one's. */
  private view(v: Loose<ApiVm>, remote = this.mode() === 'remote'): VmRecord {
    const r = vmView(v);
    return remote ? { ...r, sshPort: null } : r;
  }

  private async raw(id: string): Promise<Loose<ApiVm>> {
    return this.call(`GET /vms/${id}`, (c) => c.get(id));
  }

  async get(id: string): Promise<VmRecord> {
    const vm = this.view(await this.raw(id));
    this.updates.saw(vm);
    return vm;
  }

  async action(id: string, what: 'start' | 'stop' | 'reboot'): Promise<VmRecord> {
    const vm = await this.call(`POST /vms/${id}/${what}`, async (c) => this.view(await c[what](id)));
    this.updates.saw(vm);
    return vm;
  }

  async delete(id: string): Promise<void> {
    await this.call(`DELETE /vms/${id}`, (c) => c.delete(id));
    await this.forwards.closeAll(id);
    this.updates.gone(id);
  }

  async console(id: string, lines: number): Promise<string[]> {
    return this.call(`GET /vms/${id}/console`, async (c) => {
      const text = (await c.console(id, lines)).console;
      return text === '' ? [] : text.split('\n');
    });
  }

  async attestation(id: string): Promise<VmAttestation> {
    return this.call(`GET /vms/${id}/attestation`, async (c) => {
      const [a, vm] = await Promise.all([c.attestation(id), c.get(id)]);
      let policy;
      try {
        const all = await c.images();
        const image = all.find((i) => imageRef(i, all) === vm.image || i.id === vm.image || `${i.id}_${i.version}` === vm.image);
        policy = image ? imagePolicy(image) : null;
      } catch {
        policy = null;
      }
      return attestationView(id, a, policy);
    });
  }

  /** Runs argv as root in the guest; a non-zero exit is a result. */
  async exec(id: string, command: string[]): Promise<VmExecResult> {
    return this.call(`POST /vms/${id}/exec`, async (c) => {
      const r = await c.exec(id, command);
      return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
    });
  }

  /** Asks the manager to forward the guest port, then listens on this machine's 127.0.0.1 for it. */
  async forward(id: string, port: number): Promise<VmForward> {
    if (this.mode() === 'remote') {
      throw new AppError(
        'unsupported',
        "a remote vm-manager forwards a guest port to its own host's loopback, which this machine cannot reach; " +
          'forwarding to this machine needs the local vm-manager',
      );
    }
    const vm = await this.raw(id);
    const f = await this.call(`POST /vms/${id}/forward`, (c) => c.forward(id, port));
    return this.forwards.open(id, vm.name, port, f.address);
  }
  /** Starts following the console of VM id on the vm.console stream; returns the tail it continues from. */
  async follow(id: string, lines = 200): Promise<string> {
    const raw = await this.raw(id);
    const file = this.mode() === 'local' ? raw.paths.console : undefined;
    return this.followers.follow(id, file ? { kind: 'file', path: file } : { kind: 'poll', fetch: (n) => this.console(id, n) }, lines);
  }

  /**
   * Where a running local VM's serial console is: its console log (for a read-only tail) and its
   * serial socket (interactive). Only the local manager's files are on this machine.
   */
  async consoleSource(id: string): Promise<{ id: string; name: string; state: string; console: string; serialSocket: string | null }> {
    if (this.mode() === 'remote') {
      throw new AppError(
        'unsupported',
        "a VM's console as a terminal needs the local vm-manager (the serial socket and console log are files on its machine); " +
          'with a remote vm-manager use the console tail on the Local VMs page',
      );
    }
    const raw = await this.raw(id);
    if (!LIVE_VM_STATES.includes(raw.state)) {
      throw new AppError('conflict', `VM ${raw.name} (${id}) is ${raw.state}, so it has no console to open; start it first`, {
        vmId: id,
        state: raw.state,
      });
    }
    const console = raw.paths.console;
    if (!console)
      throw new AppError('internal', `the vm-manager did not say where the console of VM ${id} is (no paths.console in its answer)`);
    return { id, name: raw.name, state: raw.state, console, serialSocket: serialSocket(raw) };
  }

  /** The create job: POST /vms (wait_for none), then follow the VM's states to args.waitFor (./create-job). */
  create(args: VmCreateArgs): string {
    return startCreateJob(this.o.jobs, this.calls, args, this.o.pollMs);
  }

  /** Builds the test image with the local manager's CLI (`image build-test`), as a job (./images). */
  buildTestImage(): string {
    if (this.mode() === 'remote') {
      throw new AppError(
        'unsupported',
        'the test image is built by the local vm-manager; switch the connection to local, ' +
          'or build it on the remote host with `povdesk vm-manager image build-test`',
      );
    }
    return startBuildTestImage(this.o.jobs, this.o.supervisor);
  }

  /** The host key 127.0.0.1:port must present when it is the SSH forward of an attested local VM (./local-ssh). */
  async pretrustedSshKey(host: string, port: number): Promise<{ key: Buffer; what: string } | null> {
    if (this.mode() !== 'local' || !['127.0.0.1', 'localhost'].includes(host.toLowerCase())) return null;
    // No local manager has run: no local VM to pre-trust (and an SSH session must not start one).
    if (!existsSync(this.o.supervisor.endpointFile)) return null;
    return pretrustedHostKey(await this.list(), port);
  }

  /** Where a root SSH session into local VM id goes and the manager's key it signs in with (./local-ssh). */
  async sshSignIn(id: string): Promise<VmSshSignIn> {
    if (this.mode() === 'remote') {
      throw new AppError(
        'unsupported',
        "signing in with the vm-manager's key needs the local vm-manager " +
          "(the key is a file on its machine and the VM's SSH port is on its loopback)",
      );
    }
    return vmSshSignIn(await this.raw(id), this.o.supervisor.stateDir);
  }

  /** The learn job: one learn boot on the manager; the result is the proposal the page shows to confirm (./images). */
  learnGolden(image: string, size: { cpus?: number; memoryMib?: number } = {}): string {
    return startLearnGolden(this.o.jobs, this.calls.call, image, size);
  }

  /** The image's reference measurements made again from its files by the manager (no boot). */
  async remakeReferences(imageName: string): Promise<VmImage> {
    return remakeReferences(this.calls.call, imageName);
  }

  async saveGolden(args: Pick<VmLearnedGolden, 'image' | 'golden' | 'firmware'> & { cpus?: number; memoryMib?: number }): Promise<VmImage> {
    return saveGolden(this.calls.call, args);
  }

  close(): void {
    this.updates.close();
    this.followers.closeAll();
    void this.forwards.closeAll();
  }
}
