import { statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../main/core/create';
import { isOwnerBusy, ownerFiles, readOwnerInfo, tryAcquireOwnerLock } from '../../main/core/owner';
import { connectOwner } from '../../main/cli/owner-client';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { freshHome } from './procs';

/** The owner lock and endpoint in one process: files, modes, the token, refusals. */
let core: Core | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const secrets = () => new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null });

describe('owner lock and endpoint', () => {
  it('a second core on the same home is refused with the owner named; after close the lock is free', async () => {
    const home = freshHome();
    core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test', secrets: secrets() });
    expect(readOwnerInfo(home)).toMatchObject({ pid: process.pid, kind: 'test' });
    const err = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test', secrets: secrets() }).catch((e) => e);
    expect(isOwnerBusy(err)).toBe(true);
    expect(err.message).toContain(`pid ${process.pid}`);
    await core.close();
    core = null;
    const lock = tryAcquireOwnerLock(home, 'test');
    expect(lock).not.toBeNull();
    lock!.release();
  });

  it('socket and token are 0600; a client with the token is served, one without is cut off', async () => {
    const home = freshHome();
    core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test', secrets: secrets() });
    const files = ownerFiles(home);
    expect(statSync(files.endpoint).mode & 0o777).toBe(0o600);
    expect(statSync(files.token).mode & 0o777).toBe(0o600);
    const client = await connectOwner(home);
    expect(client?.pid).toBe(process.pid);
    expect(await client!.call('app.info', {})).toMatchObject({ home });
    await expect(client!.call('jobs.get', { id: 'x', extra: 1 })).rejects.toMatchObject({ code: 'invalid_request' });
    client!.close();

    // A wrong token: the connection is closed before any call is answered.
    const closedWithout = await new Promise<string>((resolve) => {
      const s = connect(files.endpoint);
      let got = '';
      s.on('data', (d) => (got += d));
      s.on('connect', () => {
        s.write(JSON.stringify({ t: 'auth', token: 'wrong-token-wrong-token' }) + '\n');
        s.write(JSON.stringify({ t: 'call', id: 1, method: 'app.info', args: {} }) + '\n');
      });
      s.on('close', () => resolve(got));
    });
    expect(closedWithout).toBe('');
    writeFileSync(files.token, 'not-the-token-not-the-token\n');
    expect(await connectOwner(home, 1000)).toBeNull();
  });
});
