import { existsSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { KEEPALIVE_DEFAULT_SEC } from '../../../shared/contract/values';
import type { JobRunner } from '../jobs/runner';
import { FileTailBackend, UnixSocketBackend } from './console-backends';
import type { SessionManager } from './manager';
import { readManagerKey } from './vm-key';

/** Where a local VM's console is (ConnectedVmManager.consoleSource). */
export type ConsoleSource = (vmId: string) => Promise<{ id: string; name: string; console: string; serialSocket: string | null }>;
/** Where root's SSH session into a local VM goes and the manager's key file it signs in with (ConnectedVmManager.sshSignIn). */
export type SshSignInSource = (vmId: string) => Promise<{ id: string; name: string; port: number; keyFile: string; publicKey: string }>;

/** Terminal work beyond one SSH session: a local VM's console as a terminal, and typing a script as a job. */
export class Terminals {
  /** vm id → the session holding its serial socket (QEMU's server socket takes one client at a time). */
  private readonly serialHolders = new Map<string, string>();

  constructor(
    private readonly d: { sessions: SessionManager; jobs: JobRunner; consoleSource: ConsoleSource; sshSignIn: SshSignInSource },
  ) {}

  /**
   * An SSH session as root into a local VM through its forwarded port, signed in with the key the
   * vm-manager holds for it (read into memory for this session only); the host key is checked as
   * for any 127.0.0.1 connection: an attested VM's manager-made key, else asked on first use.
   */
  async openVmSsh(a: { vmId: string; cols: number; rows: number }): Promise<{ sessionId: string; title: string }> {
    const vm = await this.d.sshSignIn(a.vmId);
    const privateKey = readManagerKey(vm.keyFile, vm.publicKey, `VM ${vm.name} (${vm.id})`);
    const title = `root@${vm.name}`;
    const sessionId = await this.d.sessions.open({
      target: {
        host: '127.0.0.1',
        port: vm.port,
        username: 'root',
        auth: { kind: 'privateKey', privateKey },
        jump: [],
        keepaliveSec: KEEPALIVE_DEFAULT_SEC,
        autoReconnect: true,
        title,
      },
      cols: a.cols,
      rows: a.rows,
    });
    return { sessionId, title };
  }

  /**
   * A local VM's console as a terminal session: the serial socket (interactive) or a live tail of
   * the console log (read-only). Refused for a stopped VM (conflict), an unknown one (not_found) and
   * a remote vm-manager (unsupported).
   */
  async openVmConsole(a: { vmId: string; interactive?: boolean | undefined; cols: number; rows: number }): Promise<string> {
    const m = this.d.sessions;
    const src = await this.d.consoleSource(a.vmId);
    const size = { cols: a.cols, rows: a.rows };
    if (!a.interactive) {
      return m.attach(new FileTailBackend(src.console, `${src.name} console (read-only)`), size, { autoReconnect: false });
    }
    if (!src.serialSocket || !existsSync(src.serialSocket)) {
      throw new AppError(
        'unavailable',
        `VM ${src.name} (${src.id}) has no serial socket: its QEMU was started by a vm-manager without one; stop and start the ` +
          `VM, or open the read-only console`,
        { vmId: src.id },
      );
    }
    const held = this.serialHolders.get(src.id);
    if (held && m.list().some((s) => s.sessionId === held && s.state !== 'closed')) {
      throw new AppError(
        'conflict',
        `the interactive console of VM ${src.name} is already open in another tab (QEMU's serial socket takes one connection); ` +
          `use that tab or close it first`,
        { vmId: src.id, sessionId: held },
      );
    }
    const id = m.attach(new UnixSocketBackend(src.serialSocket, `${src.name} serial console`), size);
    this.serialHolders.set(src.id, id);
    return id;
  }

  /** Types a script into a session as a job whose last line says whether the sha256 matched. */
  typeInto(a: { sessionId: string; script: string; path?: string | undefined; lineDelayMs?: number | undefined }): string {
    const m = this.d.sessions;
    const s = m.get(a.sessionId);
    return this.d.jobs.start({ kind: 'ssh.typeInto', title: `Type script into ${s.state.title}`, subject: a.sessionId }, async (job) => {
      job.progress('typing', 0, `typing ${a.script.split('\n').length} lines`);
      const r = await m.typeInto(a.sessionId, a.script, {
        ...(a.path ? { path: a.path } : {}),
        ...(a.lineDelayMs !== undefined ? { lineDelayMs: a.lineDelayMs } : {}),
        signal: job.signal,
        progress: (done, total) => job.progress('typing', done / total, `${done}/${total} lines`),
      });
      if (r.match) job.log(`sha256 match: ${r.expected} (${r.lines} lines, ${r.bytes} bytes at ${r.path})`);
      else
        job.log(
          r.actual
            ? `sha256 MISMATCH: expected ${r.expected}, the console computed ${r.actual}`
            : `no sha256sum answer from the console; expected ${r.expected}`,
          'error',
        );
      return r;
    });
  }
}
