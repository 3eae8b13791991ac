import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pidsWith, stopManager } from '../support/manager';
import { createLogger } from '../../main/services/log/logger';
import { LocalManagerSupervisor } from '../../main/services/vm/supervisor';
import { VmManagerClient } from '../../main/vm-api/client';
import { removeHome, vmSkip } from './helpers';
import { testCore } from '../support/core';

const skip = vmSkip();
const log = createLogger({ dir: null, name: 'test' });
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function gone(pid: number, ms = 10_000) {
  const end = Date.now() + ms;
  while (alive(pid) && Date.now() < end) await sleep(50);
  return !alive(pid);
}

/**
 * The real vm-manager (main/vm-manager/main.ts through tsx) as its own detached process. Each new
 * LocalManagerSupervisor stands for a new app process on the same POVDESK_HOME.
 */
describe.skipIf(skip !== null)('vm-manager supervisor (real manager process)', () => {
  const home = mkdtempSync(join(tmpdir(), 'povdesk-vmsup-'));
  const stateDir = join(home, 'vm-manager');
  afterAll(async () => {
    await stopManager(home);
    removeHome(home);
  });

  it('starts a detached manager on 127.0.0.1, endpoint file 0600, and an app restart reattaches to it', async () => {
    const first = new LocalManagerSupervisor({ home, log });
    const ep = await first.ensure();
    expect(ep.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(statSync(first.endpointFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(first.endpointFile, 'utf8'))).toMatchObject({ pid: ep.pid, token: ep.token, url: ep.url });
    // its own session (detached): it does not die with the app's process group
    expect(readFileSync(`/proc/${ep.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[3]).toBe(String(ep.pid));
    // the token is not on its command line
    expect(readFileSync(`/proc/${ep.pid}/cmdline`, 'utf8')).not.toContain(ep.token);
    const vms = await new VmManagerClient(ep.url, ep.token).list();
    expect(vms).toEqual([]);
    await expect(new VmManagerClient(ep.url, 'wrong-token-wrong-token').list()).rejects.toMatchObject({ code: 'unauthorized' });

    const second = new LocalManagerSupervisor({ home, log });
    const again = await second.ensure();
    expect(again).toEqual(ep);
    expect(pidsWith(`serve --state-dir ${stateDir}`)).toEqual([ep.pid]);
  });

  it('two app processes starting at once end with one manager', async () => {
    await new LocalManagerSupervisor({ home, log }).stop();
    const [a, b] = await Promise.all([
      new LocalManagerSupervisor({ home, log }).ensure(),
      new LocalManagerSupervisor({ home, log }).ensure(),
    ]);
    expect(a.pid).toBe(b.pid);
    expect(pidsWith(`serve --state-dir ${stateDir}`)).toEqual([a.pid]);
  });

  it('a manager that died is replaced on the next start', async () => {
    const ep = await new LocalManagerSupervisor({ home, log }).ensure();
    process.kill(ep.pid, 'SIGKILL');
    expect(await gone(ep.pid)).toBe(true);
    const next = await new LocalManagerSupervisor({ home, log }).ensure();
    expect(next.pid).not.toBe(ep.pid);
    expect(next.token).not.toBe(ep.token);
    expect(await new VmManagerClient(next.url, next.token).list()).toEqual([]);
  });

  it('an endpoint file readable by others is not trusted: the manager and its token are replaced', async () => {
    const s = new LocalManagerSupervisor({ home, log });
    const ep = await s.ensure();
    chmodSync(s.endpointFile, 0o644);
    const next = await new LocalManagerSupervisor({ home, log }).ensure();
    expect(next.token).not.toBe(ep.token);
    expect(await gone(ep.pid)).toBe(true);
    expect(statSync(s.endpointFile).mode & 0o777).toBe(0o600);
    expect(pidsWith(`serve --state-dir ${stateDir}`)).toEqual([next.pid]);
  });

  it('stop() ends the manager and removes the endpoint', async () => {
    const s = new LocalManagerSupervisor({ home, log });
    const ep = await s.ensure();
    await s.stop();
    expect(await gone(ep.pid)).toBe(true);
    expect(s.readEndpoint()).toBeNull();
  });
});

// The app leaves its manager running when it closes (its VMs outlive it); a test core must not, or
// every suite that touched a local VM leaves a daemon behind (four after one CI-style run).
describe.skipIf(skip !== null)('a test core (test/support/core.ts)', () => {
  it('stops the manager its calls started when it closes, and removes its home', async () => {
    const t = await testCore({ env: { ...process.env } });
    expect((await t.call('vm.host', {})).mode).toBe('local');
    const ep = JSON.parse(readFileSync(join(t.home, 'vm-manager', 'endpoint.json'), 'utf8')) as { pid: number };
    expect(alive(ep.pid)).toBe(true);
    await t.close();
    expect(await gone(ep.pid), `the manager (pid ${ep.pid}) still runs after close()`).toBe(true);
    expect(existsSync(t.home)).toBe(false);
  }, 120_000);
});
