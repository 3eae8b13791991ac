/**
 * The app's side of the vm-manager: which manager (the local one, started and reattached by the
 * supervisor, or a cluster's with a static token or an OIDC login, see ./remote), calls mapped to
 * AppErrors, the create job that follows a VM to its milestone by polling (so a proxy's 504 never
 * loses a VM), console following, exec, and guest ports forwarded to this machine.
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
import { sleep } from '../../lib/sleep';
import type { Hub } from '../hub';
import { VmManagerClient, type Loose } from '../../vm-api/client';
import type { ApiVm } from '../../vm-api/schemas';
import type { JobContext, JobRunner } from '../jobs/runner';
import type { Logger } from '../log/logger';
import type { SecretStore } from '../secrets/store';
import type { SettingsService } from '../settings/settings';
import { managerCall } from './errors';
import { ConsoleFollowers, type FollowOptions } from './follow';
import { ForwardRelays } from './forwards';
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
import { attestationView, hostView, imagePolicy, imageRef, imageView, learnedView, serialSocket, vmView } from './views';
import { LIVE_VM_STATES } from '../../../shared/vm-states';
import { GOLDEN_VM_SIZE, vmSizeLabel } from '../../../shared/golden-size';

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

const STEP: Record<string, number> = { creating: 0.1, installing: 0.2, booting: 0.3, attesting: 0.6, ready: 1 };
/** Errors after which the VM may well exist (a proxy timed out, the connection dropped): look, do not give up. */
const MAYBE_DONE = new Set(['timeout', 'unavailable']);

/**
 * The app's side of the vm.* methods: its connection to one vm-manager (the local one this app
 * starts, or a remote one) and what the app keeps about it (jobs, console followers, forwards,
 * vm.updated). Not the daemon's `VmService` (main/vm-manager/vms.ts), which owns the VMs' processes.
 */
export class ConnectedVmManager {
  readonly followers: ConsoleFollowers;
  readonly forwards = new ForwardRelays();
  private readonly updates: VmUpdates;

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
        "a remote vm-manager forwards a guest port to its own host's loopback, which this machine cannot reach; forwarding to this machine needs the local vm-manager",
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
        "a VM's console as a terminal needs the local vm-manager (the serial socket and console log are files on its machine); with a remote vm-manager use the console tail on the Local VMs page",
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

  /**
   * POST /vms with wait_for none. When the answer is lost (a proxy's 504, a dropped connection) the
   * VM may exist anyway: look it up by name before failing, so it is followed, not lost or doubled.
   */
  private async createCall(job: JobContext, args: VmCreateArgs): Promise<string> {
    try {
      const created = await this.call('POST /vms', (c) =>
        c.create({
          name: args.name,
          image: args.image,
          cpus: args.cpus,
          memory_mib: args.memoryMib,
          disk_gib: args.diskGib,
          ...(args.userData !== undefined ? { user_data: args.userData } : {}),
          require_attestation: args.requireAttestation,
          wait_for: 'none',
          // 'restricted' is the manager's default network; the local daemon names its NAT policy network 'nat'
          ...(args.network === 'nat' ? { network: 'nat' } : {}),
        }),
      );
      job.log(`VM ${args.name} is ${created.id} (${created.state})`);
      return created.id;
    } catch (e) {
      if (!MAYBE_DONE.has((e as AppError).code)) throw e;
      job.log(`POST /vms got no answer (${(e as Error).message}); looking for VM ${args.name}`, 'warn');
      const found = await this.call('GET /vms', async (c) => (await c.list()).find((v) => v.name === args.name));
      if (!found) throw e;
      job.log(`VM ${args.name} exists after all: ${found.id} (${found.state})`);
      return found.id;
    }
  }

  /** The create job: POST /vms (wait_for none), then follow the VM's states to args.waitFor. */
  create(args: VmCreateArgs): string {
    const waitFor = args.waitFor ?? 'ready';
    return this.o.jobs.start({ kind: 'vm.create', title: `Create VM ${args.name}`, subject: `vm:${args.name}` }, (job) =>
      this.createWork(job, args, waitFor),
    );
  }

  private async createWork(job: JobContext, args: VmCreateArgs, waitFor: 'none' | 'attested' | 'ready'): Promise<{ vm: VmRecord }> {
    job.progress('creating', 0.05, `asking the vm-manager to create ${args.name}`);
    const id = await this.createCall(job, args);
    let last = '';
    let lastNote = '';
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      if (job.signal.aborted) {
        // A half-made VM is of no use: delete it rather than leave it booting.
        try {
          await this.delete(id);
          job.log(`cancelled: deleted the half-made VM ${args.name} (${id})`, 'warn');
        } catch (e) {
          job.log(`cancelled, but deleting VM ${id} failed: ${(e as Error).message}; delete it from the list`, 'error');
          throw new AppError('cancelled', `cancelled; VM ${args.name} (${id}) could not be deleted: ${(e as Error).message}`);
        }
        throw new AppError('cancelled', `cancelled; the half-made VM ${args.name} (${id}) was deleted`);
      }
      let vm: Loose<ApiVm>;
      try {
        vm = await this.raw(id);
      } catch (e) {
        // A proxy's 504 or a dropped connection while the VM boots: the VM is still there, ask again.
        if (!MAYBE_DONE.has((e as AppError).code) || Date.now() > deadline) throw e;
        job.log(`reading VM ${id} failed (${(e as Error).message}); trying again`, 'warn');
        await sleep(this.o.pollMs ?? 500, job.signal).catch(() => undefined);
        continue;
      }
      this.updates.saw(this.view(vm));
      if (vm.state !== last) {
        last = vm.state;
        job.log(`${id}: ${vm.state}`);
      }
      const fraction = STEP[vm.state] ?? null;
      const initrd = vm.attestation.initrd;
      const note =
        vm.state !== 'attesting'
          ? vm.state
          : !initrd
            ? 'waiting for the initrd quote'
            : initrd.verified
              ? 'initrd quote verified; waiting for ready'
              : `initrd quote rejected: ${initrd.message}. The guest keeps retrying until the boot timeout; cancel to delete the VM`;
      if (`${vm.state}|${note}` !== lastNote) {
        lastNote = `${vm.state}|${note}`;
        job.progress(vm.state, fraction, note);
      }
      const reached =
        waitFor === 'none' ||
        (waitFor === 'attested' && vm.bootedAt !== null && vm.attestation.userDataReleased) ||
        (waitFor === 'ready' && vm.state === 'ready');
      if (reached) return { vm: this.view(vm) };
      if (vm.state === 'failed' || vm.state === 'stopped' || vm.state === 'deleting') {
        throw new AppError(
          'unavailable',
          `VM ${args.name} (${id}) is ${vm.state} before "${waitFor}": ${vm.lastError ?? 'no error recorded'}`,
          { vmId: id },
        );
      }
      if (vm.state === 'running' && waitFor === 'ready') {
        throw new AppError(
          'timeout',
          `VM ${args.name} (${id}) did not report ready within the manager's boot timeout and keeps running: ${vm.lastError ?? ''} — see its console, or delete it`,
          { vmId: id },
        );
      }
      if (Date.now() > deadline)
        throw new AppError('timeout', `VM ${args.name} (${id}) did not reach "${waitFor}" in 15 minutes; it keeps running`, { vmId: id });
      await sleep(this.o.pollMs ?? 500, job.signal).catch(() => undefined);
    }
  }

  /** Builds the test image with the local manager's CLI (`image build-test`), as a job. */
  buildTestImage(): string {
    if (this.mode() === 'remote') {
      throw new AppError(
        'unsupported',
        'the test image is built by the local vm-manager; switch the connection to local, or build it on the remote host with `povdesk vm-manager image build-test`',
      );
    }
    return this.o.jobs.start(
      { kind: 'vm.imageBuildTest', title: 'Build the test image', subject: 'vm:image:povdesk-test' },
      async (job) => {
        job.progress(
          'building',
          null,
          'kernel, busybox and tpm2-tools into an initramfs, then its reference measurements from the files (seconds; no boot)',
        );
        const started = Date.now();
        const out = await this.o.supervisor.runCli(['image', 'build-test'], job.signal);
        const line = out.split('\n').find((l) => l.trim().startsWith('{'));
        let info: { name?: unknown; sizeBytes?: unknown } = {};
        try {
          info = line ? (JSON.parse(line) as typeof info) : {};
        } catch {
          info = {};
        }
        const name = typeof info.name === 'string' ? info.name : 'povdesk-test';
        const seconds = Math.round((Date.now() - started) / 100) / 10;
        job.log(`built image ${name} in ${seconds} s`);
        return { image: name, seconds, sizeBytes: typeof info.sizeBytes === 'number' ? info.sizeBytes : null };
      },
    );
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
        "signing in with the vm-manager's key needs the local vm-manager (the key is a file on its machine and the VM's SSH port is on its loopback)",
      );
    }
    return vmSshSignIn(await this.raw(id), this.o.supervisor.stateDir);
  }

  /** The learn job: one learn boot on the manager; the result is the proposal the page shows to confirm. */
  learnGolden(image: string, size: { cpus?: number; memoryMib?: number } = {}): string {
    const at = { cpus: size.cpus ?? GOLDEN_VM_SIZE.cpus, memoryMib: size.memoryMib ?? GOLDEN_VM_SIZE.memoryMiB };
    const sized = vmSizeLabel(at.cpus, at.memoryMib);
    return this.o.jobs.start(
      { kind: 'vm.learnGolden', title: `Learn golden values of ${image} at ${sized}`, subject: `vm:image:${image}` },
      async (job) => {
        job.progress(
          'booting',
          null,
          `one boot of ${image} at ${sized} in learn mode (about a minute under TCG); nothing is saved until you confirm`,
        );
        const call = this.call('POST learn-golden', async (c) => learnedView(await c.learnGolden(image, at)));
        const cancelled = new Promise<never>((_, reject) =>
          job.signal.addEventListener(
            'abort',
            () =>
              reject(
                new AppError(
                  'cancelled',
                  `cancelled; nothing was saved (the learn boot of ${image} ends on the vm-manager, which deletes its VM)`,
                ),
              ),
            { once: true },
          ),
        );
        call.catch(() => {}); // after a cancel its answer is of no use
        const learned = await Promise.race([call, cancelled]);
        job.log(`learned ${Object.keys(learned.golden).length} golden values of ${image} at ${sized} in ${learned.seconds} s`);
        return learned;
      },
    );
  }

  /** The image's reference measurements made again from its files by the manager (no boot). */
  async remakeReferences(imageName: string): Promise<VmImage> {
    return this.call('POST references', async (c) => {
      await c.remakeReferences(imageName);
      const all = await c.images();
      const image = all.find((i) => imageRef(i, all) === imageName);
      if (!image) throw new AppError('not_found', `image ${imageName} is gone after its references were made again`);
      return imageView(image, all);
    });
  }

  async saveGolden(args: Pick<VmLearnedGolden, 'image' | 'golden' | 'firmware'> & { cpus?: number; memoryMib?: number }): Promise<VmImage> {
    return this.call('PUT golden', async (c) => {
      await c.saveGolden(args.image, args.golden, args.firmware, {
        cpus: args.cpus ?? GOLDEN_VM_SIZE.cpus,
        memoryMib: args.memoryMib ?? GOLDEN_VM_SIZE.memoryMiB,
      });
      const all = await c.images();
      const image = all.find((i) => imageRef(i, all) === args.image);
      if (!image) throw new AppError('not_found', `image ${args.image} is gone after saving its golden values`);
      return imageView(image, all);
    });
  }

  close(): void {
    this.updates.close();
    this.followers.closeAll();
    void this.forwards.closeAll();
  }
}
