import type { sshMethods } from '../../../shared/contract/ssh';
import type { Logger } from '../../services/log/logger';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

const ok = { ok: true as const };

export function sshHandlers({ ssh: m, terminals }: Pick<Services, 'ssh' | 'terminals'>, log: Logger): DomainHandlers<typeof sshMethods> {
  return {
    'ssh.open': async (a) => {
      const sessionId = await m.open({
        ...(a.profileId !== undefined ? { profileId: a.profileId } : {}),
        ...(a.target !== undefined ? { target: a.target } : {}),
        cols: a.cols,
        rows: a.rows,
      });
      log.info('ssh session opened', { sessionId, profileId: a.profileId ?? null, host: a.target?.host ?? null });
      return { sessionId };
    },
    'ssh.openVmConsole': async (a) => {
      const sessionId = await terminals.openVmConsole(a);
      log.info('vm console opened', { sessionId, vmId: a.vmId, interactive: a.interactive ?? false });
      return { sessionId };
    },
    'ssh.openVmSsh': async (a) => {
      const opened = await terminals.openVmSsh(a);
      log.info("ssh session opened with the vm-manager's key", { sessionId: opened.sessionId, vmId: a.vmId });
      return opened;
    },
    'ssh.input': async (a) => (m.input(a.sessionId, a.data), ok),
    'ssh.resize': async (a) => (m.resize(a.sessionId, a.cols, a.rows), ok),
    'ssh.close': async (a) => (m.close(a.sessionId), ok),
    'ssh.reconnect': async (a) => (await m.reconnect(a.sessionId), ok),
    'ssh.replay': async (a) => {
      const data = await m.replay(a.sessionId);
      return { data: data.toString('base64'), bytes: data.length };
    },
    'ssh.sessions.list': async () => m.list(),
    'ssh.answerHostKey': async (a) => {
      m.answerHostKey(a.promptId, a.accept, a.replace ?? false);
      log.info('host key answered', { promptId: a.promptId, accept: a.accept, replace: a.replace ?? false });
      return ok;
    },
    'ssh.hostKeyPrompts.list': async () => m.pendingPrompts(),
    'ssh.typeInto': async (a) => ({ jobId: terminals.typeInto(a) }),
    'ssh.profiles.list': async () => m.profiles.list(),
    'ssh.profiles.save': async (a) => m.profiles.save(a),
    'ssh.profiles.delete': async (a) => (await m.profiles.delete(a.id), ok),
    'ssh.knownHosts.list': async () =>
      m.knownHosts.list().map((k) => ({ host: k.host, port: k.port, keyType: k.keyType, fingerprint: k.fingerprint, addedAt: k.addedAt })),
    'ssh.knownHosts.remove': async (a) => ({ removed: m.knownHosts.remove(a.host, a.port) }),
    'ssh.opensshHosts': async () => m.opensshHosts(),
  };
}
