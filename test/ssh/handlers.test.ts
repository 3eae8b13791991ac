import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memorySecrets, testCore, type TestCore } from '../support/core';
import { needs } from '../support/system';
import { Consumer, Recorder, waitFor } from './harness';
import { Sshd, sshLogin } from './sshd';
import type { HostKeyPrompt, SshStatus } from '../../shared/contract/ssh';

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);

describe.skipIf(skip)('ssh methods through the real core (SQLite, job runner, stream hub, Dispatcher)', () => {
  let sshd: Sshd;
  let t: TestCore;
  beforeAll(async () => {
    sshd = new Sshd();
    t = await testCore({ secrets: memorySecrets(true) });
    const p = await t.call('ssh.profiles.save', {
      name: 'loop',
      host: '127.0.0.1',
      port: 22,
      username: sshLogin(),
      credentials: { kind: 'generate' },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
      agentForward: false,
    });
    sshd.authorize(p.publicKey!);
    await sshd.start();
    await t.call('ssh.profiles.save', {
      id: p.id,
      name: 'loop',
      host: '127.0.0.1',
      port: sshd.port,
      username: sshLogin(),
      credentials: { kind: 'keep' },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
      agentForward: false,
    });
  });
  afterAll(async () => {
    await t?.close();
    await sshd?.dispose();
  });

  it('open → prompt → answer → type-into job → known hosts list/remove', async () => {
    const prompts = new Recorder<HostKeyPrompt>(t.base.hub, 'ssh.hostKeyPrompt');
    const statuses = new Recorder<SshStatus>(t.base.hub, 'ssh.status');
    const [profile] = await t.call('ssh.profiles.list', {});
    const { sessionId } = await t.call('ssh.open', { profileId: profile!.id, cols: 90, rows: 30 });
    const c = new Consumer(t.base.hub, sessionId);
    await waitFor('prompt', () => prompts.items.find((p) => p.sessionId === sessionId));
    const [pending] = await t.call('ssh.hostKeyPrompts.list', {});
    expect(pending!.fingerprint).toBe(sshd.hostKey().fingerprint);
    await expect(t.call('ssh.answerHostKey', { promptId: 'nope', accept: true })).rejects.toMatchObject({ code: 'not_found' });
    await t.call('ssh.answerHostKey', { promptId: pending!.promptId, accept: true });
    await waitFor('open', () => statuses.items.find((s) => s.sessionId === sessionId && s.state === 'open'));
    expect((await t.call('ssh.sessions.list', {}))[0]).toMatchObject({ sessionId, state: 'open', title: 'loop' });
    await t.call('ssh.input', { sessionId, data: 'echo hh-$((9*9))\n' });
    await waitFor('echo', () => c.text.includes('hh-81'));
    const replay = await t.call('ssh.replay', { sessionId });
    expect(Buffer.from(replay.data, 'base64').toString()).toContain('hh-81');
    expect(replay.bytes).toBe(Buffer.from(replay.data, 'base64').length);
    const { jobId } = await t.call('ssh.typeInto', { sessionId, script: 'echo one\necho two\n', path: join(sshd.scratch, 't.sh') });
    const job = await t.jobs.wait(jobId);
    expect(job.state).toBe('succeeded');
    expect(job.result).toMatchObject({ match: true, lines: 2 });
    expect(await t.call('ssh.knownHosts.list', {})).toEqual([
      expect.objectContaining({ host: '127.0.0.1', port: sshd.port, keyType: 'ssh-ed25519' }),
    ]);
    await t.call('ssh.close', { sessionId });
    await expect(t.call('ssh.input', { sessionId, data: 'x' })).rejects.toMatchObject({ code: 'not_found' });
    expect(await t.call('ssh.knownHosts.remove', { host: '127.0.0.1', port: sshd.port })).toEqual({ removed: true });
    expect(await t.call('ssh.knownHosts.list', {})).toEqual([]);
  });
});
