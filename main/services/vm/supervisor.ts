/**
 * Starts the local vm-manager as its own detached process (so VMs outlive the app) and reattaches
 * to it on the next launch. The manager listens on 127.0.0.1 with a token it makes per launch; it
 * prints {url, token, pid} as one JSON line to a 0600 file we hand it as stdout, and we keep that
 * as <state>/endpoint.json (0600). A later app process reads the file, checks that the pid lives
 * and that the manager answers an authenticated request, and uses it instead of starting another.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import type { Logger } from '../log/logger';
import { VmApiError, VmManagerClient } from '../../vm-api/client';
import { sleep } from '../../lib/sleep';
import { dyingWithParent, pidExists as alive, procCmdline } from '../../lib/procs';

export const endpointSchema = lazySchema(() =>
  z
    .object({
      url: z.string().regex(/^http:\/\/127\.0\.0\.1:\d+$/, 'a loopback http URL'),
      token: z.string().min(16).max(200),
      pid: z.number().int().positive(),
      stateDir: z.string(),
      startedAt: z.string(),
    })
    .strict(),
);
export type Endpoint = z.infer<typeof endpointSchema>;

const serveLine = lazySchema(() =>
  z.object({ url: z.string(), token: z.string(), pid: z.number().int(), accelerator: z.string().nullable().optional() }),
);

export interface LocalManagerSupervisorOptions {
  home: string;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  env?: NodeJS.ProcessEnv;
  /** argv that runs the manager's CLI (serve arguments are appended); default: see managerCommand */
  command?: string[];
  startTimeoutMs?: number;
}

/** Walks up from this file to the directory holding package.json (the source tree or the app). */
function appRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  throw new AppError('internal', `cannot find the app's root above ${fileURLToPath(import.meta.url)}`);
}

/**
 * In the packaged app, the self-contained daemon electron-builder puts outside the asar
 * (<resources>/vm-manager/vm-manager.mjs, run by the app's own binary under ELECTRON_RUN_AS_NODE);
 * else the built daemon (out/main/vm-manager.js) when present with the guest files it reads beside
 * it (out/main/vm-manager-assets/, copied by the build); else its sources through tsx.
 */
export function managerCommand(
  env: NodeJS.ProcessEnv = process.env,
  // the packaged CLI runs under ELECTRON_RUN_AS_NODE outside the asar: its launcher names the folder
  resourcesPath: string | undefined = (process as { resourcesPath?: string }).resourcesPath ?? env.POVDESK_RESOURCES_DIR,
): { argv: string[]; cwd: string } {
  const packaged = resourcesPath ? join(resourcesPath, 'vm-manager', 'vm-manager.mjs') : null;
  // cwd must be a real directory: a spawn cannot start inside app.asar.
  if (packaged && existsSync(packaged) && !env.POVDESK_FROM_SOURCE) return { argv: [process.execPath, packaged], cwd: dirname(packaged) };
  const root = appRoot();
  const built = join(root, 'out', 'main', 'vm-manager.js');
  if (existsSync(built) && existsSync(join(root, 'out', 'main', 'vm-manager-assets', 'guest', 'init.sh')) && !env.POVDESK_FROM_SOURCE) {
    return { argv: [process.execPath, built], cwd: root };
  }
  return { argv: [process.execPath, '--import', 'tsx', join(root, 'main', 'vm-manager', 'main.ts')], cwd: root };
}

/** The pid's command line as one string ('' when it is gone), on every platform (procs.ts). */
function cmdline(pid: number): string {
  return (procCmdline(pid) ?? []).join(' ');
}

export const FAILED_START_MS = 30_000;
export const START_FAILED = 'the local vm-manager stopped at start';

/**
 * Starts and reattaches to the local vm-manager process; not the daemon's `Supervisor`
 * (main/vm-manager/supervision.ts), which watches each VM's QEMU.
 */
export class LocalManagerSupervisor {
  readonly stateDir: string;
  readonly endpointFile: string;
  private readonly lockFile: string;
  private readonly outFile: string;
  private readonly logFile: string;
  private current: Promise<Endpoint> | null = null;
  private failed: { at: number; error: AppError } | null = null;

  constructor(private readonly o: LocalManagerSupervisorOptions) {
    this.stateDir = join(o.home, 'vm-manager');
    this.endpointFile = join(this.stateDir, 'endpoint.json');
    this.lockFile = join(this.stateDir, 'supervisor.lock');
    this.outFile = join(this.stateDir, 'serve.out');
    this.logFile = join(this.stateDir, 'manager.log');
  }

  /**
   * The running manager's endpoint: reattached when one answers, else started now. A start that
   * failed is not retried for FAILED_START_MS (every page refresh would spawn one) unless `retry`.
   */
  ensure(retry = false): Promise<Endpoint> {
    if (this.failed && !retry && Date.now() - this.failed.at < FAILED_START_MS) return Promise.reject(this.failed.error);
    if (!this.current) {
      this.current = this.attachOrStart().then(
        (ep) => {
          this.failed = null;
          return ep;
        },
        (e: unknown) => {
          this.current = null;
          if (e instanceof AppError && e.message.startsWith(START_FAILED)) this.failed = { at: Date.now(), error: e };
          throw e;
        },
      );
    }
    return this.current;
  }

  /** The last failed start (its error says why), if it is recent. */
  lastStartFailure(): AppError | null {
    return this.failed && Date.now() - this.failed.at < FAILED_START_MS ? this.failed.error : null;
  }

  /** Forgets the cached endpoint (after the manager stopped answering) so ensure() checks again. */
  reset(): void {
    this.current = null;
  }

  /** The endpoint file if it is there, valid and 0600; null otherwise. */
  readEndpoint(): Endpoint | null {
    const r = this.readEndpointFile();
    return r && !r.loose ? r.ep : null;
  }

  /** The endpoint file's contents and whether its permissions are looser than 0600. */
  private readEndpointFile(): { ep: Endpoint; loose: boolean } | null {
    if (!existsSync(this.endpointFile)) return null;
    try {
      const mode = statSync(this.endpointFile).mode & 0o777;
      const ep = endpointSchema.parse(JSON.parse(readFileSync(this.endpointFile, 'utf8')));
      return { ep, loose: mode !== 0o600 };
    } catch (e) {
      this.o.log.warn('vm-manager endpoint file unreadable; starting a new manager', { error: (e as Error).message });
      return null;
    }
  }

  /** True when the manager at ep is alive and accepts its token. */
  async answers(ep: Endpoint): Promise<boolean> {
    if (!alive(ep.pid)) return false;
    try {
      await new VmManagerClient(ep.url, ep.token, 3000).list();
      return true;
    } catch (e) {
      // It answered (even with a record this app reads differently) and took the token.
      if (!(e instanceof VmApiError)) return false;
      return e.status === null ? e.code === 'internal_error' : e.status !== 401 && e.status !== 403;
    }
  }

  private async attachOrStart(): Promise<Endpoint> {
    mkdirSync(this.stateDir, { recursive: true, mode: 0o700 });
    const deadline = Date.now() + (this.o.startTimeoutMs ?? 60_000);
    for (;;) {
      const ep = this.readEndpoint();
      if (ep && (await this.answers(ep))) {
        this.o.log.info('reattached to the running vm-manager', { pid: ep.pid, url: ep.url });
        return ep;
      }
      if (this.takeLock()) {
        try {
          const file = this.readEndpointFile();
          if (file && !file.loose && (await this.answers(file.ep))) return file.ep;
          if (file && alive(file.ep.pid) && cmdline(file.ep.pid).includes('serve')) {
            // Deaf, or its token may have leaked (file readable by others): two managers must never
            // share a state dir, so the old one goes (its VMs are reattached by the new one).
            this.o.log.warn(
              file.loose
                ? 'the vm-manager endpoint file was readable by others; replacing the manager and its token'
                : 'the recorded vm-manager is alive but does not answer; stopping it',
              { pid: file.ep.pid },
            );
            await this.kill(file.ep.pid);
          }
          rmSync(this.endpointFile, { force: true });
          return await this.start(deadline);
        } finally {
          rmSync(this.lockFile, { force: true });
        }
      }
      if (Date.now() > deadline)
        throw new AppError(
          'timeout',
          `another POV Desk process is starting the vm-manager and did not finish; remove ${this.lockFile} if no other POV Desk runs`,
        );
      await sleep(200);
    }
  }

  private takeLock(): boolean {
    try {
      const fd = openSync(this.lockFile, 'wx', 0o600);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = Number(readFileSync(this.lockFile, 'utf8').trim());
      if (!Number.isInteger(holder) || holder <= 0 || !alive(holder)) {
        rmSync(this.lockFile, { force: true });
        return this.takeLock();
      }
      return false;
    }
  }

  private async start(deadline: number): Promise<Endpoint> {
    const cmd = this.o.command ? { argv: this.o.command, cwd: process.cwd() } : managerCommand(this.o.env);
    rmSync(this.outFile, { force: true });
    const out = openSync(this.outFile, 'w', 0o600);
    const err = openSync(this.logFile, 'a', 0o600);
    const [bin, ...pre] = cmd.argv;
    // No --token on the command line (ps would show it): the manager makes one and prints it to `out`.
    // It exits once no VM runs and the POV Desk process owning the home (owner.json) is gone.
    const args = [...pre, 'serve', '--state-dir', this.stateDir, '--port', '0', '--exit-unowned', join(this.o.home, 'owner.json')];
    const child = spawn(bin!, args, {
      cwd: cmd.cwd,
      detached: true,
      windowsHide: true, // no console window for the daemon on Windows
      stdio: ['ignore', out, err],
      env: { ...process.env, ...this.o.env, ELECTRON_RUN_AS_NODE: '1', POVDESK_HOME: this.o.home },
    });
    closeSync(out);
    closeSync(err);
    let exited: string | null = null;
    child.on('exit', (code, sig) => (exited = sig ? `signal ${sig}` : `exit code ${code}`));
    child.on('error', (e) => (exited = e.message));
    child.unref();
    this.o.log.info('starting the local vm-manager', { pid: child.pid, stateDir: this.stateDir });
    for (;;) {
      const text = existsSync(this.outFile) ? readFileSync(this.outFile, 'utf8') : '';
      const line = text.split('\n').find((l) => l.trim().startsWith('{'));
      if (line) {
        const parsed = serveLine.safeParse(JSON.parse(line));
        if (!parsed.success)
          throw new AppError('internal', `the vm-manager printed an endpoint this app cannot read: ${line.slice(0, 200)}`);
        const ep: Endpoint = {
          url: parsed.data.url,
          token: parsed.data.token,
          pid: parsed.data.pid,
          stateDir: this.stateDir,
          startedAt: new Date().toISOString(),
        };
        endpointSchema.parse(ep);
        this.writeEndpoint(ep);
        rmSync(this.outFile, { force: true });
        this.o.log.info('local vm-manager started', { pid: ep.pid, url: ep.url, accelerator: parsed.data.accelerator ?? null });
        return ep;
      }
      if (exited !== null) {
        throw new AppError(
          'unavailable',
          `${START_FAILED} (${exited}): ${this.logTail(1) || 'no output'}. The Local VMs page lists what this host is missing.`,
        );
      }
      if (Date.now() > deadline) {
        if (child.pid) await this.kill(child.pid);
        throw new AppError('timeout', `the local vm-manager did not come up in time; its log: ${this.logFile} (${this.logTail(3)})`);
      }
      await sleep(100);
    }
  }

  private writeEndpoint(ep: Endpoint) {
    const tmp = `${this.endpointFile}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, JSON.stringify(ep), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.endpointFile);
  }

  logTail(lines: number): string {
    try {
      return readFileSync(this.logFile, 'utf8').trim().split('\n').slice(-lines).join(' | ');
    } catch {
      return '';
    }
  }

  private async kill(pid: number) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    if (alive(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }

  /** Runs one `vm-manager` CLI command on this state dir (e.g. image build-test); resolves with its stdout. */
  runCli(args: string[], signal?: AbortSignal): Promise<string> {
    const cmd = this.o.command ? { argv: this.o.command, cwd: process.cwd() } : managerCommand(this.o.env);
    const [bin, ...pre] = cmd.argv;
    return new Promise((resolve, reject) => {
      // It dies with this process: a build whose job is gone with the app would only run on unseen.
      const child = spawn(...dyingWithParent(bin!, [...pre, ...args, '--state-dir', this.stateDir]), {
        cwd: cmd.cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...this.o.env, ELECTRON_RUN_AS_NODE: '1', POVDESK_HOME: this.o.home },
        ...(signal ? { signal } : {}),
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += String(d)));
      child.stderr.on('data', (d) => (err += String(d)));
      child.on('error', (e) =>
        reject(
          e.name === 'AbortError'
            ? new AppError('cancelled', `vm-manager ${args.join(' ')} cancelled`)
            : new AppError('internal', `cannot run vm-manager ${args.join(' ')}: ${e.message}`),
        ),
      );
      child.on('close', (code) => {
        if (code === 0) resolve(out);
        else {
          const line = err.trim().split('\n').slice(-3).join(' ') || `exit code ${code}`;
          const m = /^vm-manager: ([a-z_]+): /.exec(line);
          const known = m?.[1] === 'invalid_request' || m?.[1] === 'not_found' || m?.[1] === 'unavailable';
          reject(new AppError(known ? (m![1] as 'invalid_request') : 'internal', `vm-manager ${args.join(' ')} failed: ${line}`));
        }
      });
    });
  }

  /**
   * Stops the local manager (its VMs keep running and are reattached by the next manager) and
   * removes the endpoint file. The app never calls this on exit; tests and "restart manager" do.
   */
  async stop(): Promise<void> {
    const ep = this.readEndpointFile()?.ep ?? null;
    this.current = null;
    if (ep && alive(ep.pid) && cmdline(ep.pid).includes('serve')) await this.kill(ep.pid);
    rmSync(this.endpointFile, { force: true });
  }
}
