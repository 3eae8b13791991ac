import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import type { Core } from '../../main/core/create';
import { createLogger } from '../../main/services/log/logger';
import { startHost, type Host } from '../../main/host/server';
import { tempHome, testCore } from '../foundation/helpers';
import { startEmulator, type Emulator } from '../skytap-emulator';
import { JOB_KIND } from '../../shared/contract/job-kinds';

/** Every regular file under dir, recursively (sockets and the like have no bytes to scan). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    const st = statSync(p);
    return st.isDirectory() ? files(p) : st.isFile() ? [p] : [];
  });
}

/** Which of the secrets appear, byte for byte, in which files. */
function scan(dir: string, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const f of files(dir)) {
    const bytes = readFileSync(f);
    for (const [name, value] of Object.entries(secrets)) if (bytes.includes(Buffer.from(value))) found.push(`${name} in ${f}`);
  }
  return found;
}

describe('the logger redacts nested fields and errors', () => {
  it('a secret-named field at any depth, in arrays, and secrets inside Error objects', () => {
    const dir = tempHome();
    const log = createLogger({ dir, name: 't' });
    log.addSecret('registered-secret-value');
    log.info('nested', {
      req: { apiToken: 'nested-api-token-value', headers: { authorization: 'opaque-auth-value' } },
      items: [{ password: 'in-array-password' }],
    });
    log.error('failed', { error: new Error('server said registered-secret-value is wrong'), user: 'me' });
    const text = readFileSync(join(dir, 't.log'), 'utf8');
    for (const s of ['nested-api-token-value', 'opaque-auth-value', 'in-array-password', 'registered-secret-value'])
      expect(text).not.toContain(s);
    expect(text).toContain('"user":"me"');
    // The error's message is kept (redacted), not dropped as `{}`.
    expect(text).toContain('server said [redacted] is wrong');
  });

  it('a cycle in the fields does not throw', () => {
    const log = createLogger({ dir: tempHome(), name: 'c' });
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(() => log.info('cycle', { a })).not.toThrow();
  });
});

// Item 9 of the security review: every secret the app holds, logged anywhere (nested, in an
// error message, in a job record), never appears in the logs, the diagnostics or the database.
describe('no secret reaches a file or the diagnostics', () => {
  const SECRETS: Record<string, string> = {
    skytapToken: 'skytap-secret-7f3a9c2e41',
    controlPlaneToken: 'cp-secret-b81d5e0f99',
    controlPlaneEnvToken: 'cp-env-secret-2c4e6a8b0d',
    remoteVmToken: 'vm-remote-secret-5a7c9e1f3b',
  };
  let core: Core;
  let emu: Emulator;
  let host: Host;
  let diagnostics = '';
  const call = (m: string, a: unknown) => core.dispatcher.call(m as never, a as never, { transport: 'ws' });
  const attempt = (m: string, a: unknown) => call(m, a).catch((e: unknown) => e);

  beforeAll(async () => {
    emu = await startEmulator();
    core = await testCore({ POVDESK_CONTROL_PLANE_TOKEN: SECRETS.controlPlaneEnvToken });
    host = await startHost({ core, staticDir: tempHome() });
    SECRETS.launchToken = host.token;
    const { log, jobs } = core.base;
    // Each secret enters the way the app takes it in.
    await call('settings.saveSkytap', { username: 'se', url: emu.url, apiToken: SECRETS.skytapToken });
    await attempt('skytap.testConnection', {});
    await call('controlNode.saveSettings', { controlPlaneUrl: 'https://cp.example.com', token: SECRETS.controlPlaneToken });
    await call('vm.setConnection', { mode: 'remote', url: 'http://127.0.0.1:9', token: SECRETS.remoteVmToken });
    await attempt('vm.list', {});
    await call('vm.setConnection', { mode: 'local' });
    // …and is then logged carelessly: nested, inside an error, in a job's progress, log, error and result.
    for (const [name, value] of Object.entries(SECRETS)) {
      log.info('request', { name, req: { headers: { 'x-debug': `k=${value}` }, body: { note: value } } });
      log.error('call failed', { name, error: new Error(`upstream refused ${value}`) });
    }
    const id = jobs.start({ kind: JOB_KIND.sshTypeInto, title: 'leaky job' }, async (job) => {
      for (const value of Object.values(SECRETS)) {
        job.log(`using ${value}`);
        job.progress(`step ${value}`, 0.5, `message ${value}`);
      }
      throw new AppError('unauthorized', `rejected ${SECRETS.controlPlaneToken}`, {
        token: SECRETS.remoteVmToken,
        nested: { t: SECRETS.skytapToken },
      });
    });
    expect((await jobs.wait(id)).state).toBe('failed');
    const ok = jobs.start({ kind: JOB_KIND.sshTypeInto, title: 'leaky result' }, async () => ({ echoed: SECRETS.launchToken }));
    expect((await jobs.wait(ok)).state).toBe('succeeded');
    // Another process's log (the vm-manager's) that never learned these secrets.
    writeFileSync(
      join(core.base.paths.logs, 'other-process.log'),
      Object.values(SECRETS)
        .map((v) => `{"message":"saw ${v}"}`)
        .join('\n') + '\n',
    );
    diagnostics = ((await call('app.diagnostics', {})) as { text: string }).text;
  }, 60_000);
  afterAll(async () => {
    await host?.close();
    await core?.close();
    await emu?.close();
  });

  it('the job records hold no secret', () => {
    const rows = JSON.stringify(
      core.base.jobs.list({ includeRoutine: true, limit: 10 }).map((j) => ({ j, log: core.base.jobs.log(j.id) })),
    );
    expect(rows).toContain('[redacted]');
    for (const value of Object.values(SECRETS)) expect(rows).not.toContain(value);
  });

  it('Copy diagnostics holds no secret, not even from a log written by another process', () => {
    expect(diagnostics).toContain('other-process.log');
    for (const [name, value] of Object.entries(SECRETS)) expect(diagnostics, name).not.toContain(value);
  });

  it('a byte scan of the home directory (logs, database, WAL) finds no secret', async () => {
    const home = core.base.paths.home;
    core.base.db.pragma('wal_checkpoint(PASSIVE)');
    // other-process.log is the stand-in for a log this process did not write; it is left out.
    const found = scan(home, SECRETS).filter((f) => !f.includes('other-process.log'));
    expect(found).toEqual([]);
  });
});
