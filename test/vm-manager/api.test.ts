import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tailLines } from '../../main/vm-manager/console';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { repo, stateWithImage, vmSkip } from './support';

const skip = vmSkip();

describe.skipIf(skip !== null)('vm-manager REST API: auth, routes, bad input', () => {
  let m: RunningManager;
  let state: string;
  const call = async (method: string, path: string, body?: unknown, token: string | null = 'T0K') => {
    const res = await fetch(`${m.url}/api/v1${path}`, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };

  beforeAll(async () => {
    state = stateWithImage();
    m = await serve({ stateDir: state, token: 'T0K' });
  });
  afterAll(async () => {
    await m?.close({ stopVms: true });
    rmSync(state, { recursive: true, force: true });
  });

  it('wants the bearer token and answers JSON errors', async () => {
    expect((await call('GET', '/host', undefined, null)).status).toBe(401);
    const wrong = await call('GET', '/vms', undefined, 'nope');
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('unauthorized');
    const nf = await call('GET', '/nothing');
    expect(nf.status).toBe(404);
    expect(nf.json).toEqual({ error: { code: 'not_found', message: expect.stringContaining('no route') } });
    expect((await call('GET', '/vms/abcdef12')).json.error.code).toBe('not_found');
  });

  it('reports the host: kvm present but unusable here is reported with the reason, tcg chosen', async () => {
    const { status, json } = await call('GET', '/host');
    expect(status).toBe(200);
    expect(json.cpus).toBeGreaterThan(0);
    expect(json.qemu.version).toMatch(/QEMU emulator version/);
    expect(json.swtpm.version).toMatch(/\d+\.\d+/);
    expect(json.ovmfCode).toMatch(/OVMF/);
    expect(json.ready).toBe(true);
    expect(json.missing).toBeUndefined(); // the document: absent when ready
    expect(json.povdesk.missing).toEqual([]);
    const kvm = json.povdesk.accelerator.probes.find((p: { accel: string }) => p.accel === 'kvm');
    if (kvm?.result === 'unusable') {
      // the machines this was written on: /dev/kvm exists, the guest stops with an internal error
      expect(json.povdesk.accelerator.chosen).toBe('tcg');
      expect(kvm.detail).toMatch(/present but unusable/);
      expect(json.povdesk.accelerator.reason).toMatch(/tcg chosen because kvm is present but unusable/);
      expect(json.povdesk.accelerator.warning).toMatch(/TCG/);
    } else {
      expect(['kvm', 'tcg']).toContain(json.povdesk.accelerator.chosen);
    }
  });

  it('lists the test image with its policy', async () => {
    const { json } = await call('GET', '/images');
    expect(json.map((i: { id: string }) => i.id)).toEqual(['povdesk-test']);
    expect(json[0].policy.pcrs.initrd).toContain(9); // policy.json as the image build wrote it
    expect(json[0].povdesk.policy.pcrs.initrd).toContain(9);
    expect(json[0].povdesk.policy.recordOnly).toEqual([1, 5]);
    // the reference measurements build-test made from the files (Image.policy is policy.json)
    expect(json[0].policy.references.boot).toMatchObject({ kind: 'kernel', loader: 'qemu-x86-linux-q35' });
    expect(json[0].povdesk.policy).toMatchObject({ references: { boot: { kind: 'kernel' } }, unpredictable: null });
  });

  const bad: [string, unknown, RegExp][] = [
    ['an unknown field', { name: 'a1', colour: 'red' }, /unknown field "colour"/],
    ['a name that is not a DNS label', { name: 'Bad_Name' }, /name must be a DNS label/],
    ['a name over 63 characters', { name: 'a'.repeat(64) }, /at most 63/],
    ['memory 0', { name: 'a2', memory_mib: 0 }, /memory_mib must be at least 256/],
    ['cpus 1.5', { name: 'a3', cpus: 1.5 }, /cpus must be a whole number/],
    ['a bad wait_for', { name: 'a4', wait_for: 'later' }, /wait_for/],
    ['an image path outside the state dir', { name: 'a5', image: '/etc/passwd' }, /outside the state dir/],
    ['an image path escaping with ..', { name: 'a6', image: 'images/../../x' }, /outside the state dir/],
    ['a file in the state dir that is not an image', { name: 'a7', image: 'notes.txt/' }, /not an image/],
    ['an unknown image name', { name: 'a8', image: 'nosuch' }, /no image "nosuch"/],
    ['a body that is not JSON', '{"name":', /not JSON/],
  ];
  for (const [what, body, msg] of bad) {
    it(`refuses ${what} with 400 and creates nothing`, async () => {
      writeFileSync(join(state, 'notes.txt'), 'hello\n');
      const { status, json } = await call('POST', '/vms', body);
      expect(json.error.message).toMatch(msg);
      expect(status).toBe(400); // the document: an image that does not exist is an invalid spec
      expect(json.error.code).toBe('invalid_request');
      expect((await call('GET', '/vms')).json).toEqual([]);
      expect(readdirSync(join(state, 'vms'))).toEqual([]);
    });
  }

  // The size a learn boot runs at / golden values are saved for: refused before any VM or write.
  const badGolden: [string, string, unknown, RegExp][] = [
    ['POST', 'learn-golden', { cpus: 0 }, /cpus/],
    ['POST', 'learn-golden', { memory_mib: 100 }, /memory_mib/],
    ['POST', 'learn-golden', { cpus: 2, memory_mib: 1024.5 }, /memory_mib/],
    ['POST', 'learn-golden', { size: '2x1024' }, /unknown field "size"/],
    ['PUT', 'golden', { golden: { 0: 'a'.repeat(64) }, cpus: 65 }, /cpus/],
    ['PUT', 'golden', { golden: { 0: 'a'.repeat(64) }, memory_mib: 'lots' }, /memory_mib/],
  ];
  for (const [verb, route, body, msg] of badGolden) {
    it(`refuses ${verb} /images/povdesk-test/${route} ${JSON.stringify(body).slice(0, 40)}: 400, booting and writing nothing`, async () => {
      const policyBefore = readFileSync(join(state, 'images', 'povdesk-test', 'policy.json'), 'utf8');
      const { status, json } = await call(verb, `/images/povdesk-test/${route}`, body);
      expect(json.error.message).toMatch(msg);
      expect(status).toBe(400);
      expect((await call('GET', '/vms')).json).toEqual([]);
      expect(readFileSync(join(state, 'images', 'povdesk-test', 'policy.json'), 'utf8')).toBe(policyBefore);
    });
  }

  it('saves golden values per size; values of another firmware are dropped when new ones are saved', async () => {
    const file = join(state, 'images', 'povdesk-test', 'policy.json');
    const before = readFileSync(file, 'utf8');
    const fw = (c: string) => ({ path: '/fw/OVMF_CODE.fd', sha256: c.repeat(64) });
    const put = (body: object) => call('PUT', '/images/povdesk-test/golden', body);
    try {
      const was = JSON.parse(before);
      // (golden values are the fallback of an image without references: this policy has both, which is fine for the store)
      const a = await put({ golden: { 4: 'a'.repeat(64) }, firmware: fw('d'), cpus: 2, memory_mib: 1024 });
      expect(a.status).toBe(200);
      expect(a.json.policy.goldenSizes).toEqual([{ cpus: 2, memoryMiB: 1024 }]);
      let p = JSON.parse(readFileSync(file, 'utf8'));
      expect(p.golden).toEqual(was.golden); // the default size's values stay
      expect(p.golden_sizes).toEqual({ '2x1024': { sha256: { 4: 'a'.repeat(64) } } });
      // another size, learned with another firmware: the values of the old firmware go
      expect((await put({ golden: { 4: 'b'.repeat(64) }, firmware: fw('e'), cpus: 1, memory_mib: 512 })).status).toBe(200);
      p = JSON.parse(readFileSync(file, 'utf8'));
      expect(p.golden).toEqual({ sha256: {} });
      expect(p.golden_sizes).toEqual({ '1x512': { sha256: { 4: 'b'.repeat(64) } } });
      expect(p.golden_firmware).toEqual(fw('e'));
    } finally {
      writeFileSync(file, before);
    }
  });

  it('imports only from inside the state dir, and only real images', async () => {
    const outside = join(tmpdir(), `vmm-outside-${process.pid}.qcow2`);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', outside, '64M']);
    const r1 = await call('POST', '/images', { path: outside });
    expect(r1.status).toBe(400);
    expect(r1.json.error.message).toMatch(/outside the state dir/);
    rmSync(outside);
    mkdirSync(join(state, 'import'), { recursive: true });
    writeFileSync(join(state, 'import', 'text.img'), 'this is not a disk\n'.repeat(100));
    const r2 = await call('POST', '/images', { path: 'import/text.img' });
    expect(r2.status).toBe(400);
    expect(r2.json.error.message).toMatch(/not a disk image/);
    expect(r2.json.error.message).toMatch(/MBR or GPT/);
    const r3 = await call('POST', '/images', { path: 'import/text.img', extra: 1 });
    expect(r3.status).toBe(400);
    expect((await call('GET', '/images')).json).toHaveLength(1);
    // a real qcow2 goes in, converted to a base image with a policy
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', join(state, 'import', 'disk.qcow2'), '64M']);
    const ok = await call('POST', '/images', { path: 'import/disk.qcow2', name: 'mydisk' });
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ name: 'mydisk', kind: 'disk', sourceFormat: 'qcow2', virtualSizeBytes: 64 * 1024 * 1024 });
    const again = await call('POST', '/images', { path: 'import/disk.qcow2', name: 'mydisk' });
    expect(again.status).toBe(409);
    expect(existsSync(join(state, 'images', 'mydisk', 'base.qcow2'))).toBe(true);
    // an empty disk: nothing to predict, and the policy says why (golden values are its fallback)
    const mine = (await call('GET', '/images/mydisk')).json;
    expect(mine.policy).toMatchObject({
      unpredictable: 'the disk has no partition table',
      pcrs: { initrd: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11] },
    });
    expect(mine.policy.references).toBeUndefined();
    expect(mine.povdesk.policy).toMatchObject({ references: null, unpredictable: 'the disk has no partition table' });
    expect(readdirSync(join(state, 'images')).filter((n) => n.includes('importing'))).toEqual([]);
  });

  it('imports raw (with a partition table) and vmdk images', async () => {
    const raw = join(state, 'import', 'disk.raw');
    execFileSync('qemu-img', ['create', '-q', '-f', 'raw', raw, '16M']);
    const noTable = await call('POST', '/images', { path: 'import/disk.raw', name: 'rawdisk' });
    expect(noTable.status).toBe(400); // all zeros: not recognisably a disk
    const buf = Buffer.alloc(512);
    buf[510] = 0x55;
    buf[511] = 0xaa;
    const { openSync, writeSync, closeSync } = await import('node:fs');
    const fd = openSync(raw, 'r+');
    writeSync(fd, buf, 0, 512, 0);
    closeSync(fd);
    expect((await call('POST', '/images', { path: 'import/disk.raw', name: 'rawdisk' })).json).toMatchObject({
      name: 'rawdisk',
      sourceFormat: 'raw',
    });
    execFileSync('qemu-img', ['create', '-q', '-f', 'vmdk', join(state, 'import', 'disk.vmdk'), '32M']);
    expect((await call('POST', '/images', { path: 'import/disk.vmdk', name: 'vmdkdisk' })).json).toMatchObject({
      name: 'vmdkdisk',
      sourceFormat: 'vmdk',
      kind: 'disk',
    });
  });

  it('boots an imported disk image from its own qcow2 overlay on the immutable base', async () => {
    const small = await call('POST', '/vms', {
      name: 'disk-too-small',
      image: 'mydisk',
      disk_gib: 1,
      require_attestation: false,
      wait_for: 'none',
    });
    expect(small.status).toBe(201); // 64 MiB base fits in 1 GiB
    const vm = small.json;
    expect(vm.state).toBe('booting');
    const info = JSON.parse(execFileSync('qemu-img', ['info', '-U', '--output=json', vm.paths.volume], { encoding: 'utf8' }));
    expect(info['backing-filename']).toBe(join(state, 'images', 'mydisk', 'base.qcow2'));
    expect(info['virtual-size']).toBe(1024 ** 3);
    expect((await call('DELETE', `/vms/${vm.id}`)).status).toBe(204);
    expect(existsSync(vm.paths.dir)).toBe(false);
    expect((await call('GET', '/vms')).json).toEqual([]);
  });

  it('refuses a second manager on the same state dir while one runs', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(repo, 'main', 'vm-manager', 'main.ts'), 'serve', '--state-dir', state], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/another vm-manager \(pid \d+\) serves/);
  });

  it('validates console line counts', async () => {
    const r = await call('GET', '/vms/abcdef12/console?lines=0');
    expect([400, 404]).toContain(r.status);
  });
});

describe.skipIf(skip !== null)('vm-manager on a unix socket', () => {
  it('serves the same API on a socket, for the client too', async () => {
    const state = stateWithImage();
    const sock = join(state, 'api.sock');
    const m = await serve({ stateDir: state, socket: sock, token: 'S' });
    try {
      expect(m.url).toBe(`unix:${sock}`);
      const { TestClient: VmManagerClient } = await import('./support');
      const c = new VmManagerClient(m.url, 'S');
      expect((await c.images()).length).toBe(1);
      expect(await c.list()).toEqual([]);
      await expect(new VmManagerClient(m.url, 'wrong').list()).rejects.toMatchObject({ code: 'unauthorized' });
      await expect(c.create({ name: 'x', memory_mib: 0 })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/memory_mib must be at least 256/),
      });
    } finally {
      await m.close();
      rmSync(state, { recursive: true, force: true });
    }
  });
});

describe('console tail', () => {
  it('returns the last lines like tail -n, without reading the whole file', () => {
    const dir = join(tmpdir(), `vmm-tail-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const f = join(dir, 'c.log');
    const lines = Array.from({ length: 50_000 }, (_, i) => `line ${i} ${'x'.repeat(i % 97)}`);
    writeFileSync(f, lines.join('\n') + '\n');
    for (const n of [1, 7, 100, 5000]) {
      const want = execFileSync('tail', ['-n', String(n), f], { encoding: 'utf8' })
        .replace(/\n$/, '')
        .split('\n');
      expect(tailLines(f, n)).toEqual(want);
    }
    writeFileSync(f, 'no newline at end');
    expect(tailLines(f, 3)).toEqual(['no newline at end']);
    expect(tailLines(join(dir, 'missing.log'), 3)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });
});
