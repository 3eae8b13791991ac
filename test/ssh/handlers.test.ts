import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Base } from '../../main/core/base';
import { sshHandlers } from '../../main/core/handlers/ssh';
import { StreamHub } from '../../main/core/streams';
import { JobRunner } from '../../main/services/jobs/runner';
import { createLogger } from '../../main/services/log/logger';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { SettingsService } from '../../main/services/settings/settings';
import { openDatabase } from '../../main/services/store/db';
import { migrations } from '../../main/services/store/migrations';
import ssh from '../../main/services/store/migrations/004-ssh';
import { needs } from '../support/system';
import { Consumer, Recorder, waitFor } from './harness';
import { Sshd } from './sshd';
import type { HostKeyPrompt, SshStatus } from '../../shared/contract/ssh';

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);

describe.skipIf(skip)('ssh handlers on a real Base (SQLite, job runner, stream hub)', () => {
  let sshd: Sshd;
  let home: string;
  let base: Base;
  let closers: (() => void | Promise<void>)[] = [];
  beforeAll(async () => {
    sshd = new Sshd();
    home = mkdtempSync(join(tmpdir(), 'povdesk-sshh-'));
    const db = openDatabase(join(home, 'povdesk.db'), [...migrations.filter((m) => m.version !== 4), ssh]);
    const secrets = new MemorySecretStore({ backend: 'memory', available: true, message: 'test', remedy: null });
    const log = createLogger({ dir: null, name: 'test' });
    base = {
      home,
      env: {},
      role: 'test',
      db,
      secrets,
      jobs: new JobRunner(db),
      hub: new StreamHub(),
      log,
      settings: new SettingsService(db, secrets, {}, log),
      paths: { home, database: join(home, 'povdesk.db'), logs: home },
      onClose: (fn) => closers.push(fn),
    };
    const h = sshHandlers(base);
    const p = await h['ssh.profiles.save']({ name: 'loop', host: '127.0.0.1', port: 22, username: 'root', credentials: { kind: 'generate' }, jump: [], keepaliveSec: 15, autoReconnect: false, agentForward: false }, { transport: 'test' });
    sshd.authorize(p.publicKey!);
    await sshd.start();
    await h['ssh.profiles.save']({ id: p.id, name: 'loop', host: '127.0.0.1', port: sshd.port, username: 'root', credentials: { kind: 'keep' }, jump: [], keepaliveSec: 15, autoReconnect: false, agentForward: false }, { transport: 'test' });
  });
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await base?.jobs.shutdown();
    base?.db.close();
    await sshd?.dispose();
    rmSync(home, { recursive: true, force: true });
  });

  it('open → prompt → answer → type-into job → known hosts list/remove', async () => {
    const call = { transport: 'test' as const };
    const h = sshHandlers(base);
    const prompts = new Recorder<HostKeyPrompt>(base.hub, 'ssh.hostKeyPrompt');
    const statuses = new Recorder<SshStatus>(base.hub, 'ssh.status');
    const [profile] = await h['ssh.profiles.list']({}, call);
    const { sessionId } = await h['ssh.open']({ profileId: profile!.id, cols: 90, rows: 30 }, call);
    const c = new Consumer(base.hub, sessionId);
    await waitFor('prompt', () => prompts.items.find((p) => p.sessionId === sessionId));
    const [pending] = await h['ssh.hostKeyPrompts.list']({}, call);
    expect(pending!.fingerprint).toBe(sshd.hostKey().fingerprint);
    await expect(h['ssh.answerHostKey']({ promptId: 'nope', accept: true }, call)).rejects.toMatchObject({ code: 'not_found' });
    await h['ssh.answerHostKey']({ promptId: pending!.promptId, accept: true }, call);
    await waitFor('open', () => statuses.items.find((s) => s.sessionId === sessionId && s.state === 'open'));
    expect((await h['ssh.sessions.list']({}, call))[0]).toMatchObject({ sessionId, state: 'open', title: 'loop' });
    await h['ssh.input']({ sessionId, data: 'echo hh-$((9*9))\n' }, call);
    await waitFor('echo', () => c.text.includes('hh-81'));
    const replay = await h['ssh.replay']({ sessionId }, call);
    expect(Buffer.from(replay.data, 'base64').toString()).toContain('hh-81');
    expect(replay.bytes).toBe(Buffer.from(replay.data, 'base64').length);
    const { jobId } = await h['ssh.typeInto']({ sessionId, script: 'echo one\necho two\n', path: join(sshd.dir, 't.sh') }, call);
    const job = await base.jobs.wait(jobId);
    expect(job.state).toBe('succeeded');
    expect(job.result).toMatchObject({ match: true, lines: 2 });
    expect(await h['ssh.knownHosts.list']({}, call)).toEqual([expect.objectContaining({ host: '127.0.0.1', port: sshd.port, keyType: 'ssh-ed25519' })]);
    await h['ssh.close']({ sessionId }, call);
    await expect(h['ssh.input']({ sessionId, data: 'x' }, call)).rejects.toMatchObject({ code: 'not_found' });
    expect(await h['ssh.knownHosts.remove']({ host: '127.0.0.1', port: sshd.port }, call)).toEqual({ removed: true });
    expect(await h['ssh.knownHosts.list']({}, call)).toEqual([]);
  });
});
