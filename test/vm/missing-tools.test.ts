import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeHome } from './helpers';
import { testCore, type TestCore } from '../support/core';

/**
 * A host without QEMU, swtpm and tpm2-tools on PATH (an empty PATH in this worker and in the
 * manager it spawns): the manager refuses to start, and vm.host still answers with the app's own
 * report listing each missing piece with its install line. A failed start is not retried on every
 * call, only on recheck.
 */
describe('vm-manager on a host that lacks the tools', () => {
  const home = mkdtempSync(join(tmpdir(), 'povdesk-vmmiss-'));
  const emptyPath = mkdtempSync(join(tmpdir(), 'povdesk-empty-path-'));
  const savedPath = process.env.PATH;
  process.env.PATH = emptyPath;
  let t: TestCore;
  beforeAll(async () => {
    t = await testCore({ home, env: { ...process.env, PATH: emptyPath } });
  });
  afterAll(async () => {
    process.env.PATH = savedPath;
    await t?.close();
    removeHome(home);
    removeHome(emptyPath);
  });

  it('reports what is missing with install lines, says why the manager is not running, and does not respawn on every call', async () => {
    const host = await t.call('vm.host', {});
    expect(host.managerError).toMatch(/stopped at start.*cannot run VMs/);
    expect(host.endpoint).toBe('not running');
    expect(host.ready).toBe(false);
    const installs = Object.fromEntries(host.missing.map((m) => [m.what, m.install]));
    expect(installs['qemu-system-x86_64']).toBe('apt-get install qemu-system-x86');
    expect(installs['swtpm']).toBe('apt-get install swtpm swtpm-tools');
    expect(host.tools.find((t) => t.name === 'qemu-system-x86_64')?.found).toBe(false);
    await expect(t.call('vm.list', {})).rejects.toMatchObject({ code: 'unavailable', message: expect.stringContaining('cannot run VMs') });
    const log = () =>
      readFileSync(join(home, 'vm-manager', 'manager.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('cannot run VMs')).length;
    expect(log()).toBe(1);
    await t.call('vm.host', { recheck: true });
    expect(log()).toBe(2);
  }, 60_000);
});
