import { existsSync } from 'node:fs';
import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import type { sshMethods } from '../../../shared/contract/ssh';
import { FileTailBackend, UnixSocketBackend } from '../../services/ssh/console-backends';
import { SessionManager } from '../../services/ssh/manager';
import type { Base } from '../base';
import type { CallInfo } from '../dispatch';
import { vmAppFor } from './vm';

type SshHandlers = {
  [M in keyof typeof sshMethods]: (
    args: z.output<(typeof sshMethods)[M]['args']>,
    call: CallInfo,
  ) => Promise<z.output<(typeof sshMethods)[M]['result']>>;
};

const managers = new WeakMap<Base, SessionManager>();

/**
 * The one SessionManager of a Base. The local vm-manager integration reaches it through this to
 * add a VM's serial console as a terminal: `sshManagerFor(base).attach(new UnixSocketBackend(...))`.
 */
export function sshManagerFor(base: Base): SessionManager {
  let m = managers.get(base);
  if (!m) {
    m = new SessionManager({
      db: base.db, secrets: base.secrets, hub: base.hub,
      // A local attested VM's SSH port: its key is the one the vm-manager made and released to it after attestation.
      pretrusted: (host, port) => vmAppFor(base).pretrustedSshKey(host, port),
    });
    managers.set(base, m);
    const mgr = m;
    base.onClose(() => mgr.closeAll());
  }
  return m;
}

const ok = { ok: true as const };

/** vm id → the session holding its serial socket (QEMU's server socket takes one client at a time). */
const serialHolders = new WeakMap<SessionManager, Map<string, string>>();

/**
 * A local VM's console as a terminal session: the serial socket (interactive) or a live tail of
 * the console log (read-only). Refused for a stopped VM (conflict), an unknown one (not_found) and
 * a remote vm-manager (unsupported).
 */
async function openVmConsole(base: Base, m: SessionManager, a: { vmId: string; interactive?: boolean | undefined; cols: number; rows: number }): Promise<string> {
  const src = await vmAppFor(base).consoleSource(a.vmId);
  const size = { cols: a.cols, rows: a.rows };
  if (!a.interactive) {
    return m.attach(new FileTailBackend(src.console, `${src.name} console (read-only)`), size, { autoReconnect: false });
  }
  if (!src.serialSocket || !existsSync(src.serialSocket)) {
    throw new AppError(
      'unavailable',
      `VM ${src.name} (${src.id}) has no serial socket: its QEMU was started by a vm-manager without one; stop and start the VM, or open the read-only console`,
      { vmId: src.id },
    );
  }
  let holders = serialHolders.get(m);
  if (!holders) serialHolders.set(m, (holders = new Map()));
  const held = holders.get(src.id);
  if (held && m.list().some((s) => s.sessionId === held && s.state !== 'closed')) {
    throw new AppError(
      'conflict',
      `the interactive console of VM ${src.name} is already open in another tab (QEMU's serial socket takes one connection); use that tab or close it first`,
      { vmId: src.id, sessionId: held },
    );
  }
  const id = m.attach(new UnixSocketBackend(src.serialSocket, `${src.name} serial console`), size);
  holders.set(src.id, id);
  return id;
}

export function sshHandlers(base: Base): SshHandlers {
  const m = sshManagerFor(base);
  return {
    'ssh.open': async (a) => {
      const sessionId = await m.open({
        ...(a.profileId !== undefined ? { profileId: a.profileId } : {}),
        ...(a.target !== undefined ? { target: a.target } : {}),
        cols: a.cols,
        rows: a.rows,
      });
      base.log.info('ssh session opened', { sessionId, profileId: a.profileId ?? null, host: a.target?.host ?? null });
      return { sessionId };
    },
    'ssh.openVmConsole': async (a) => {
      const sessionId = await openVmConsole(base, m, a);
      base.log.info('vm console opened', { sessionId, vmId: a.vmId, interactive: a.interactive ?? false });
      return { sessionId };
    },
    'ssh.input': async (a) => (m.input(a.sessionId, a.data), ok),
    'ssh.resize': async (a) => (m.resize(a.sessionId, a.cols, a.rows), ok),
    'ssh.close': async (a) => (m.close(a.sessionId), ok),
    'ssh.reconnect': async (a) => (await m.reconnect(a.sessionId), ok),
    'ssh.replay': async (a) => {
      const data = m.replay(a.sessionId);
      return { data: data.toString('base64'), bytes: data.length };
    },
    'ssh.sessions.list': async () => m.list(),
    'ssh.answerHostKey': async (a) => {
      m.answerHostKey(a.promptId, a.accept, a.replace ?? false);
      base.log.info('host key answered', { promptId: a.promptId, accept: a.accept, replace: a.replace ?? false });
      return ok;
    },
    'ssh.hostKeyPrompts.list': async () => m.pendingPrompts(),
    'ssh.typeInto': async (a) => {
      const s = m.get(a.sessionId);
      const jobId = base.jobs.start({ kind: 'ssh.typeInto', title: `Type script into ${s.state.title}`, subject: a.sessionId }, async (job) => {
        job.progress('typing', 0, `typing ${a.script.split('\n').length} lines`);
        const r = await m.typeInto(a.sessionId, a.script, {
          ...(a.path ? { path: a.path } : {}),
          ...(a.lineDelayMs !== undefined ? { lineDelayMs: a.lineDelayMs } : {}),
          signal: job.signal,
          progress: (done, total) => job.progress('typing', done / total, `${done}/${total} lines`),
        });
        if (r.match) job.log(`sha256 match: ${r.expected} (${r.lines} lines, ${r.bytes} bytes at ${r.path})`);
        else job.log(r.actual ? `sha256 MISMATCH: expected ${r.expected}, the console computed ${r.actual}` : `no sha256sum answer from the console; expected ${r.expected}`, 'error');
        return r;
      });
      return { jobId };
    },
    'ssh.profiles.list': async () => m.profiles.list(),
    'ssh.profiles.save': async (a) => m.profiles.save(a),
    'ssh.profiles.delete': async (a) => (await m.profiles.delete(a.id), ok),
    'ssh.knownHosts.list': async () => m.knownHosts.list().map((k) => ({ host: k.host, port: k.port, keyType: k.keyType, fingerprint: k.fingerprint, addedAt: k.addedAt })),
    'ssh.knownHosts.remove': async (a) => ({ removed: m.knownHosts.remove(a.host, a.port) }),
  };
}
