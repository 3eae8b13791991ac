/**
 * DELETE /api/v1/images/{name} (added for template baking, which removes an image whose proof
 * failed or was cancelled): gone from the list and the disk, 404 for an unknown one, 409 while a
 * VM uses it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClient as VmManagerClient } from './support';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { vmSkip } from './support';

const skip = vmSkip();

describe.skipIf(skip !== null)('vm-manager: delete an image', () => {
  let state: string;
  let m: RunningManager;
  let c: VmManagerClient;
  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'vmm-del-'));
    m = await serve({ stateDir: state, token: 'tok' });
    c = new VmManagerClient(m.url, 'tok');
    mkdirSync(join(state, 'import'));
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', join(state, 'import', 'd.qcow2'), '64M']);
  });
  afterAll(async () => {
    for (const v of m.vms.list()) await m.vms.delete(v.id).catch(() => {});
    await m.close({ stopVms: true });
    rmSync(state, { recursive: true, force: true });
  });

  it('removes an unused image; unknown → not_found; in use → conflict naming the VM', async () => {
    await c.importImage(join(state, 'import', 'd.qcow2'), 'gone');
    await c.deleteImage('gone');
    expect((await c.images()).map((i) => i.id)).not.toContain('gone');
    expect(readdirSync(join(state, 'images'))).toEqual([]);
    await expect(c.deleteImage('gone')).rejects.toMatchObject({ code: 'not_found' });

    await c.importImage(join(state, 'import', 'd.qcow2'), 'used');
    const vm = await c.create({ name: 'user', image: 'used', wait_for: 'none', require_attestation: false });
    await expect(c.deleteImage('used')).rejects.toThrow(new RegExp(`used by VM ${vm.id}`));
    expect(existsSync(join(state, 'images', 'used', 'base.qcow2'))).toBe(true);
    await c.delete(vm.id);
    await c.deleteImage('used');
    expect(readdirSync(join(state, 'images'))).toEqual([]);
  }, 120_000);
});
