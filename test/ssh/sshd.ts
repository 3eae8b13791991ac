import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { freeLoopbackPort } from '../../main/lib/procs';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export const SSHD = '/usr/sbin/sshd';

/** The account the suites' sessions log in as (sshLogin). */
const LOGIN_NAME = 'povdesk-login';
let login: string | null = null;

/**
 * The account the suites' sessions log in as, never root: a session's login shell runs the
 * account's dotfiles, and root's are the machine's. One machine's root ran `pyenv init` from
 * ~/.bashrc; a session closed while it started left pyenv's rehash lock behind, and from then on
 * every root login waited 60 s for it and every terminal test timed out. So, as root: a
 * `povdesk-login` account made once per machine with Debian's default dotfiles (useradd -m), kept
 * (two suites may use it at once). Not root: sshd can only log in the user running it, so that user.
 */
export function sshLogin(): string {
  if (login) return login;
  if (process.getuid?.() !== 0) return (login = userInfo().username);
  try {
    execFileSync('id', [LOGIN_NAME], { stdio: 'ignore' });
  } catch {
    try {
      // -p '*': no password, and not locked ('!'): sshd without PAM refuses any login to a locked account
      execFileSync('useradd', ['-m', '-s', '/bin/bash', '-p', '*', LOGIN_NAME], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      if ((e as { status?: number }).status !== 9) throw e; // 9: made meanwhile by another suite
    }
  }
  return (login = LOGIN_NAME);
}

export interface SshdOptions {
  password?: boolean;
  /** Passwords checked by PAM through keyboard-interactive only (PasswordAuthentication no). */
  pam?: boolean;
  /** Extra sshd_config lines. */
  extra?: string[];
}

/**
 * A real OpenSSH server on 127.0.0.1 with its own host key, config, authorized_keys and log in a
 * temp dir (`sshd -D -e -f cfg`). No system service or system config is touched; only the
 * privilege-separation dir /run/sshd is created if missing (sshd refuses to start without it).
 */
/** A started sshd that trusts a fresh ed25519 client key (the suites' usual pair). */
export async function sshdWithKey(opts: SshdOptions = {}): Promise<{ sshd: Sshd; key: { private: string; public: string } }> {
  const key = generateEd25519('povdesk-test');
  const sshd = new Sshd(opts);
  sshd.authorize(key.public);
  await sshd.start();
  return { sshd, key };
}

export class Sshd {
  readonly dir: string;
  port = 0;
  private proc: ChildProcess | null = null;
  /** The listening sshd's pid (its sessions are its descendants), null when stopped. */
  get pid(): number | null {
    return this.proc?.pid ?? null;
  }
  private logText = '';

  /** A folder the login account can write in (typed scripts), inside `dir`. */
  readonly scratch: string;

  constructor(private readonly opts: SshdOptions = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'povdesk-sshd-'));
    // the login account reads test data here and writes in scratch; the host key stays 0600
    chmodSync(this.dir, 0o755);
    this.scratch = join(this.dir, 'scratch');
    mkdirSync(this.scratch);
    chmodSync(this.scratch, 0o1777);
    this.newHostKey();
    writeFileSync(join(this.dir, 'authorized_keys'), '', { mode: 0o644 }); // sshd reads it as the account logging in
  }

  get hostKeyFile() {
    return join(this.dir, 'host_ed25519');
  }

  /** The host key's public line and its fingerprint as `ssh-keygen -lf` prints it. */
  hostKey(): { line: string; fingerprint: string } {
    const line = readFileSync(this.hostKeyFile + '.pub', 'utf8').trim();
    const out = execFileSync('ssh-keygen', ['-lf', this.hostKeyFile + '.pub'], { encoding: 'utf8' });
    return { line, fingerprint: out.split(/\s+/)[1]! };
  }

  newHostKey() {
    rmSync(this.hostKeyFile, { force: true });
    rmSync(this.hostKeyFile + '.pub', { force: true });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'test-host', '-f', this.hostKeyFile]);
  }

  authorize(publicLine: string) {
    writeFileSync(join(this.dir, 'authorized_keys'), publicLine.trim() + '\n', { flag: 'a' });
  }

  get log(): string {
    return this.logText;
  }
  /** The end of sshd's log, with whether the listener still runs: context for a failed wait. */
  logTail(chars = 3000): string {
    const state = this.proc
      ? this.proc.exitCode === null && this.proc.signalCode === null
        ? `pid ${this.proc.pid} running`
        : `exited (${this.proc.exitCode ?? this.proc.signalCode})`
      : 'stopped';
    return `sshd on port ${this.port}, ${state}; last of its log:\n${this.logText.slice(-chars)}`;
  }
  clearLog() {
    this.logText = '';
  }

  async start(port?: number): Promise<void> {
    if (!existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755, recursive: true });
    this.port = port ?? (this.port || (await freeLoopbackPort()));
    const cfg = join(this.dir, 'sshd_config');
    writeFileSync(
      cfg,
      [
        `Port ${this.port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${this.hostKeyFile}`,
        `PidFile ${join(this.dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${join(this.dir, 'authorized_keys')}`,
        'StrictModes no',
        'PermitRootLogin yes',
        `UsePAM ${this.opts.pam ? 'yes' : 'no'}`,
        `PasswordAuthentication ${this.opts.password && !this.opts.pam ? 'yes' : 'no'}`,
        `KbdInteractiveAuthentication ${this.opts.pam ? 'yes' : 'no'}`,
        'PubkeyAuthentication yes',
        'AllowTcpForwarding yes',
        'PrintMotd no',
        'PrintLastLog no',
        'LogLevel DEBUG1',
        'MaxStartups 50',
        ...(this.opts.extra ?? []),
        '',
      ].join('\n'),
    );
    const proc = spawn(SSHD, ['-D', '-e', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc = proc;
    proc.stderr!.on('data', (d: Buffer) => (this.logText += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`sshd did not start in 10 s; its log:\n${this.logText}`)), 10_000);
      const check = () => {
        if (/Server listening on/.test(this.logText)) {
          clearTimeout(t);
          proc.stderr!.off('data', check);
          resolve();
        }
      };
      proc.stderr!.on('data', check);
      proc.once('exit', (code) => {
        clearTimeout(t);
        reject(new Error(`sshd exited with ${code}; its log:\n${this.logText}`));
      });
    });
  }

  /** Stops the listener and every connection it forked (found by parent pid, killed by pid). */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    this.proc = null;
    const kids = childrenOf(proc.pid!);
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    for (const pid of kids) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
    }
    await gone;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start(this.port);
  }

  async dispose() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Direct children of pid, from /proc (sshd forks one per connection). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Peak resident memory of a process from /proc (kB). */
export function rssKb(pid = process.pid): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/** A throwaway account with a real password, for password authentication. Root only. */
export function makeUser(name: string, password: string): string | null {
  if (process.getuid?.() !== 0) return 'not running as root: cannot create an account with a password';
  try {
    execFileSync('id', [name], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['-M', '-d', '/tmp', '-s', '/bin/sh', name]);
  }
  execFileSync('chpasswd', { input: `${name}:${password}\n` });
  return null;
}

export function removeUser(name: string) {
  try {
    execFileSync('userdel', [name], { stdio: 'ignore' });
  } catch {
    /* not there */
  }
}

/**
 * A loopback TCP relay to a port that can be frozen: bytes stop flowing both ways on existing
 * connections without any FIN or RST, like a laptop lid closing or a Wi-Fi network vanishing.
 */
export class FreezableRelay {
  port = 0;
  frozen = false;
  private readonly server = createServer((client) => {
    const up = connect(this.target, '127.0.0.1');
    this.pairs.push([client, up]);
    const relay = (from: Socket, to: Socket) => from.on('data', (d: Buffer) => !this.frozen && to.write(d));
    relay(client, up);
    relay(up, client);
    const end = () => {
      if (this.frozen) return;
      client.destroy();
      up.destroy();
    };
    client.on('close', end).on('error', end);
    up.on('close', end).on('error', end);
  });
  private pairs: [Socket, Socket][] = [];
  constructor(private readonly target: number) {}
  start(): Promise<void> {
    return new Promise((r) =>
      this.server.listen(0, '127.0.0.1', () => ((this.port = (this.server.address() as { port: number }).port), r())),
    );
  }
  /** Existing and new connections go silent until thaw(). */
  freeze() {
    this.frozen = true;
  }
  /** Drops the silent connections (as the OS would eventually) and lets new ones through. */
  thaw() {
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    this.pairs = [];
    this.frozen = false;
  }
  close() {
    this.thaw();
    this.server.close();
  }
}
