import type { z } from 'zod';
import type { sshMethods } from '../../../shared/contract/ssh';
import { SessionManager } from '../../services/ssh/manager';
import type { Base } from '../base';
import type { CallInfo } from '../dispatch';

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
    m = new SessionManager({ db: base.db, secrets: base.secrets, hub: base.hub });
    managers.set(base, m);
    const mgr = m;
    base.onClose(() => mgr.closeAll());
  }
  return m;
}

const ok = { ok: true as const };

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
