/**
 * labTemplates.list / create / update / delete through the real core's Dispatcher: Skytap's
 * catalogue from the emulator, local templates on a real directory, images checked against the
 * real vm-manager daemon's REST handler (gsd's fake launcher in place of QEMU; no VM is started).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { createApiHandler } from '../../main/vm-manager/api';
import { hostReport } from '../../main/vm-manager/host';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { Networks } from '../../main/vm-manager/networks';
import { VmService } from '../../main/vm-manager/vms';
import { coreWorld, type CoreWorld } from '../pov/helpers';
import { testCore } from '../support/core';
import { needs } from '../support/system';
import { attachLocalManager } from '../vm/helpers';
import { FakeLauncher } from '../vm-manager/fake-launcher';

const skip = needs(['qemu-system-x86_64', 'swtpm', 'dropbearkey', 'ssh-keygen']);
const TOKEN = 'labtpl-token-0123456789abcdef';
const NODE_IMAGE = 'debian-node';

function addImage(state: string, name: string): void {
  const img = join(state, 'images', name);
  mkdirSync(img, { recursive: true });
  writeFileSync(
    join(img, 'image.json'),
    JSON.stringify({
      name,
      kind: 'kernel',
      createdAt: new Date().toISOString(),
      kernel: 'vmlinuz',
      initrd: 'initrd.img',
      cmdline: 'console=ttyS0',
      sizeBytes: 1,
      sha256: '0'.repeat(64),
    }),
  );
}

const vm = (over: Record<string, unknown> = {}) => ({
  name: 'ctl',
  image: NODE_IMAGE,
  os: 'linux' as const,
  cpus: 2,
  memoryMib: 2048,
  diskGib: 20,
  ...over,
});

describe.skipIf(skip)('templates.* through the core', () => {
  let w: CoreWorld;
  let state: string;
  let server: Server;
  let vms: VmService;
  const dir = () => join(w.home, 'lab-templates');
  const files = () => (existsSync(dir()) ? readdirSync(dir()).sort() : []);

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'labtpl-vmm-'));
    addImage(state, TEST_IMAGE);
    addImage(state, NODE_IMAGE);
    const networks = new Networks(state);
    vms = new VmService({ stateDir: state, launcher: new FakeLauncher(), networkMode: (n) => networks.get(n).mode });
    server = createServer(createApiHandler({ stateDir: state, token: TOKEN, vms, networks, host: () => hostReport() }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    w = await coreWorld();
    attachLocalManager(w.home, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: TOKEN, stateDir: state });
  }, 60_000);

  afterAll(async () => {
    vms?.detach();
    await w?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it("lists Skytap's catalogue as skytap.listTemplates reads it, each VM with its OS and no image", async () => {
    const { templates: catalogue } = await w.call('skytap.listTemplates', {});
    const r = await w.call('labTemplates.list', { platform: 'skytap' });
    expect(r.platform).toBe('skytap');
    expect(r.templates.map((t) => [t.id, t.name, t.description])).toEqual(catalogue.map((t) => [t.id, t.name, t.description]));
    expect(r.templates.every((t) => !t.builtIn)).toBe(true);
    const pam = r.templates.find((t) => t.name.startsWith('PAM POV'))!;
    expect(pam.vms).toEqual([
      { name: 'control-node', os: 'linux', image: null },
      { name: 'win-jump', os: 'windows', image: null },
      { name: 'rhel-target', os: 'linux', image: null },
      { name: 'appliance', os: 'unknown', image: null },
    ]);
  });

  it('lists the bundled test template first for local, then creates, lists and deletes a user template', async () => {
    const before = await w.call('labTemplates.list', { platform: 'local' });
    expect(before.templates).toEqual([
      {
        id: TEST_TEMPLATE_ID,
        name: expect.any(String),
        description: expect.any(String),
        builtIn: true,
        vms: [{ name: 'test-vm', os: 'linux', image: TEST_IMAGE, cpus: 2, memoryMib: 2048, diskGib: 20, requireAttestation: true }],
      },
    ]);

    const { template } = await w.call('labTemplates.create', {
      name: 'Two node',
      description: 'control node and test VM',
      vms: [vm(), vm({ name: 'target', image: TEST_IMAGE, requireAttestation: true })],
    });
    expect(template).toMatchObject({
      name: 'Two node',
      builtIn: false,
      vms: [
        { name: 'ctl', image: NODE_IMAGE, os: 'linux' },
        { name: 'target', image: TEST_IMAGE },
      ],
    });
    expect(files()).toEqual([`${template.id}.json`]);
    expect((await w.call('labTemplates.list', { platform: 'local' })).templates.map((t) => t.id)).toEqual([TEST_TEMPLATE_ID, template.id]);
    // the store the platform reads sees the sizes
    expect(w.services.localLabTemplates.get(template.id)?.vms[1]).toMatchObject({
      cpus: 2,
      memoryMib: 2048,
      diskGib: 20,
      requireAttestation: true,
    });

    expect(await w.call('labTemplates.delete', { id: template.id })).toEqual({});
    expect(files()).toEqual([]);
    expect((await w.call('labTemplates.list', { platform: 'local' })).templates.map((t) => t.id)).toEqual([TEST_TEMPLATE_ID]);
  });

  it(
    'updates a template in place, its images checked as on create; refuses the built-in one first, and a missing image, changing ' +
      'nothing',
    async () => {
      const { template } = await w.call('labTemplates.create', { name: 'Edit me', vms: [vm()] });
      const path = join(dir(), `${template.id}.json`);
      const { template: edited } = await w.call('labTemplates.update', {
        id: template.id,
        name: 'Edited',
        description: 'two VMs now',
        vms: [vm({ memoryMib: 4096 }), vm({ name: 'target', image: TEST_IMAGE, requireAttestation: true })],
      });
      expect(edited).toEqual({
        id: template.id,
        name: 'Edited',
        description: 'two VMs now',
        builtIn: false,
        vms: [
          { name: 'ctl', image: NODE_IMAGE, os: 'linux', cpus: 2, memoryMib: 4096, diskGib: 20, requireAttestation: false },
          { name: 'target', image: TEST_IMAGE, os: 'linux', cpus: 2, memoryMib: 2048, diskGib: 20, requireAttestation: true },
        ],
      });
      expect((await w.call('labTemplates.list', { platform: 'local' })).templates[1]).toEqual(edited);
      expect(files()).toEqual([`${template.id}.json`]);
      const bytes = readFileSync(path, 'utf8');
      await expect(
        w.call('labTemplates.update', { id: template.id, name: 'Edited', vms: [vm({ image: 'no-such-image' })] }),
      ).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/no image "no-such-image" \(VM ctl\)/),
      });
      // The built-in template is refused before its images are even asked about.
      await expect(
        w.call('labTemplates.update', { id: TEST_TEMPLATE_ID, name: 'Mine', vms: [vm({ image: 'no-such-image' })] }),
      ).rejects.toMatchObject({
        code: 'invalid_request',
        message: 'The bundled test template is built in and cannot be changed.',
      });
      await expect(w.call('labTemplates.update', { id: 'not-there', name: 'Mine', vms: [vm()] })).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(w.call('labTemplates.update', { id: template.id, name: 'x', vms: [vm()], owner: 'me' } as never)).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/owner/),
      });
      expect(readFileSync(path, 'utf8')).toBe(bytes);
      await w.call('labTemplates.delete', { id: template.id });
    },
  );

  it('refuses an image the connected vm-manager does not have, naming it and what it has; writes nothing', async () => {
    await expect(
      w.call('labTemplates.create', { name: 'Missing', vms: [vm(), vm({ name: 'two', image: 'no-such-image' })] }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/no image "no-such-image" \(VM two\); it has debian-node, povdesk-test/),
    });
    expect(files()).toEqual([]);
  });

  it.each([
    ['an unknown platform', 'labTemplates.list', { platform: 'vsphere' }, /platform/],
    ['an extra field', 'labTemplates.create', { name: 'x', vms: [vm()], owner: 'me' }, /owner/],
    ['no VMs', 'labTemplates.create', { name: 'x', vms: [] }, /at least one VM/],
    ['nine VMs', 'labTemplates.create', { name: 'x', vms: Array.from({ length: 9 }, (_, i) => vm({ name: `v${i}` })) }, /at most 8/],
    ['two VMs of one name', 'labTemplates.create', { name: 'x', vms: [vm(), vm()] }, /unique/],
    ['memory below 256 MiB', 'labTemplates.create', { name: 'x', vms: [vm({ memoryMib: 100 })] }, /memoryMib/],
    ['a path as id', 'labTemplates.delete', { id: '../../etc/passwd' }, /id/],
  ])('refuses %s as invalid_request, writing nothing', async (_what, method, args, message) => {
    await expect(w.call(method as 'labTemplates.list', args as never)).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(message),
    });
    expect(files()).toEqual([]);
  });

  it('refuses a name already taken, deleting the built-in template and an unknown id', async () => {
    const { template } = await w.call('labTemplates.create', { name: 'Taken', vms: [vm()] });
    await expect(w.call('labTemplates.create', { name: 'TAKEN', vms: [vm()] })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/already exists/),
    });
    await expect(w.call('labTemplates.delete', { id: TEST_TEMPLATE_ID })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/built in/),
    });
    await expect(w.call('labTemplates.delete', { id: 'not-there' })).rejects.toMatchObject({ code: 'not_found' });
    expect(files()).toEqual([`${template.id}.json`]);
    await w.call('labTemplates.delete', { id: template.id });
  });
});

describe('labTemplates.create with no vm-manager answering', () => {
  it('says the images cannot be checked and writes nothing', async () => {
    const t = await testCore();
    try {
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
      const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
      await new Promise<void>((r) => closed.close(() => r()));
      await t.call('vm.setConnection', { mode: 'remote', url, token: 'a-token-for-nobody' });
      await expect(t.call('labTemplates.create', { name: 'Offline', vms: [vm()] })).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/Cannot check the template's images/),
      });
      expect(existsSync(join(t.home, 'lab-templates'))).toBe(false);
    } finally {
      await t.close();
    }
  });
});
