/**
 * Real bakes, real boots: a minimal Debian from Debian's packages is baked (runner, docker.io,
 * open-vm-tools in libguestfs's appliance with no guest network, the test agent's image
 * preloaded), boots under TCG in the local vm-manager (OVMF + swtpm, the disk as the manager boots
 * any imported disk), and its runner fetches the probe from the metadata service and runs it with
 * the preloaded image in Docker. Then the export is checked byte by byte, and the OVA, taken back
 * as a source, is baked again: Docker present → left alone, and the converted-back disk passes the
 * same proof.
 *
 * The first bake is the lab's control-node recipe (test/lab/control-node-image.ts), kept as its
 * cached disk when none is cached: on a cold cache (every CI run) the lab, the cancels in
 * bad-input.test.ts and the benches then import it instead of baking Debian a second time.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerScript } from '../../main/services/control-node/runner';
import { guestfsEnv } from '../../main/services/bake/tools';
import { AGENT_REF } from '../lab/agent-image';
import { CONTROL_NODE_IMAGE as NAME, controlNodeBakeArgs, keepControlNodeDisk } from '../lab/control-node-image';
import { bakeSkip, bakeWorld, leftovers, tarMembers, type BakeWorld } from './support';

const skip = bakeSkip();
const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');

describe.skipIf(skip !== null)('bake.start (real mmdebstrap, libguestfs, QEMU/TCG boots)', () => {
  let w: BakeWorld;
  let ova = '';

  beforeAll(async () => {
    w = await bakeWorld();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('bakes a minimal Debian: runner + docker.io + open-vm-tools + a preloaded image, proof boot green, docker enabled, nothing left over', async () => {
    const t0 = Date.now();
    const id = w.svc.start(controlNodeBakeArgs(w));
    const job = await w.jobs.wait(id);
    const log = w.jobs.log(id).map((l) => l.message);
    if (job.state !== 'succeeded') console.log(log.slice(-60).join('\n'));
    expect(job.state, job.error?.message).toBe('succeeded');
    const r = job.result as { manifest: { stages: Record<string, number>; docker: string; packages: Record<string, string>; runner: { sha256: string } }; proof: { passed: boolean; dockerEnabled: string; runnerSha256: string; message: string; attestation?: { required: boolean; verified: boolean | null; message: string; events: { count: number; checked: number } | null } } };
    console.log(`bake debian: ${Math.round((Date.now() - t0) / 1000)} s, stages ${JSON.stringify(r.manifest.stages)}; ${log.find((l) => l.startsWith('source: Debian base'))}`);
    expect(r.proof.passed).toBe(true);
    // The import made the disk's reference measurements (its GRUB, read from the disk): the proof VM
    // required attestation, so its runner got the probe only after the quote and event log verified.
    expect(r.proof.attestation, JSON.stringify(r.proof.attestation)).toMatchObject({ required: true, verified: true });
    expect(r.proof.attestation!.message).toMatch(/^initrd quote verified; event log replayed/);
    expect(r.proof.attestation!.events!.checked).toBeGreaterThan(20);
    console.log(`bake debian: proof attestation ${r.proof.attestation!.message}`);
    expect(Object.keys(r.manifest.packages)).toContain('tpm2-tools');
    expect(r.proof.dockerEnabled).toBe('enabled');
    // the runner the guest ran is byte-identical to what the app prints
    expect(r.proof.runnerSha256).toBe(runnerScript().sha256);
    expect(r.manifest.runner.sha256).toBe(runnerScript().sha256);
    expect(r.manifest.docker).toBe('installed');
    expect(Object.keys(r.manifest.packages)).toEqual(expect.arrayContaining(['docker.io', 'open-vm-tools']));
    // Docker did more than say enabled: it ran a container made from the guest's own /bin/sh
    expect(log.some((l) => /POVDESK-PROBE [0-9a-f]{16} .* container=ok/.test(l))).toBe(true);
    expect(r.proof.message).toContain('and a container ran');
    expect(r.proof.message).toContain(`preloaded ${AGENT_REF} in Docker`);
    const listed = w.svc.list();
    expect(listed.map((b) => b.name)).toEqual([NAME]);
    expect(listed[0]?.proof?.passed).toBe(true);
    expect((await w.client.localImages()).map((i) => i.name)).toContain(NAME);
    // nothing but the image and its entry: no work dir, no VM, no tool processes
    expect((await leftovers(w, NAME)).filter((l) => !l.startsWith(`image ${NAME}`) && !l.startsWith('baked entry'))).toEqual([]);
    if (await keepControlNodeDisk(w)) console.log('bake debian: kept as the cached control-node image');
  }, 1_500_000);

  it('exports an OVA Skytap accepts: USTAR .ovf,.mf,.vmdk; streamOptimized VMDK v3; manifest verifies; OVF parses, sizes match', async () => {
    const id = w.svc.exportImage({ imageId: NAME, format: 'ova' });
    const job = await w.jobs.wait(id);
    expect(job.state, job.error?.message).toBe('succeeded');
    const files = (job.result as { files: { path: string; bytes: number }[] }).files;
    expect(files).toHaveLength(1);
    ova = files[0]!.path;
    expect(ova.endsWith(`/${NAME}.ova`)).toBe(true);
    const members = tarMembers(ova);
    expect(members.map((m) => m.name)).toEqual([`${NAME}.ovf`, `${NAME}.mf`, `${NAME}-disk1.vmdk`]);
    for (const m of members) expect([m.magic, m.version]).toEqual(['ustar\0', '00']);
    const out = join(w.home, 'ova-x');
    mkdirSync(out);
    execFileSync('tar', ['-xf', ova, '-C', out]);
    const vmdk = join(out, `${NAME}-disk1.vmdk`);
    const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', vmdk], { encoding: 'utf8' }));
    expect(info.format).toBe('vmdk');
    expect(info['format-specific']?.data?.['create-type']).toBe('streamOptimized');
    const head = Buffer.alloc(8);
    const fd = openSync(vmdk, 'r');
    readSync(fd, head, 0, 8, 0);
    closeSync(fd);
    expect(head.subarray(0, 4).toString('latin1')).toBe('KDMV');
    expect(head.readUInt32LE(4)).toBe(3);
    const mf = readFileSync(join(out, `${NAME}.mf`), 'utf8');
    const lines = mf.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) {
      const m = /^SHA256\(([^)]+)\)= ([0-9a-f]{64})$/.exec(l);
      expect(m, l).not.toBeNull();
      expect(sha(join(out, m![1]!))).toBe(m![2]);
    }
    const ovf = readFileSync(join(out, `${NAME}.ovf`), 'utf8');
    execFileSync('xmllint', ['--noout', join(out, `${NAME}.ovf`)]); // throws when it does not parse
    const size = Number(new RegExp(`ovf:href="${NAME}-disk1\\.vmdk" ovf:id="file1" ovf:size="(\\d+)"`).exec(ovf)?.[1]);
    expect(size).toBe(statSync(vmdk).size);
    expect(members[2]!.size).toBe(size);
    const capacity = Number(/ovf:capacity="(\d+)"/.exec(ovf)?.[1]);
    expect(capacity).toBe(info['virtual-size']);
    expect(ovf).toContain(`<VirtualSystem ovf:id="${NAME}">`);
    expect(ovf.match(/<VirtualSystem\b/g)).toHaveLength(1);
    expect(ovf).toMatch(/<rasd:Connection>automatic<\/rasd:Connection>/);
    expect(ovf).toMatch(/vmw:osType="debian11_64Guest"/);
    console.log(`export: OVA ${statSync(ova).size} bytes for a ${capacity}-byte disk`);
  }, 600_000);

  it('the OVA taken back as a source: Docker present is left alone (same version), and the converted-back disk passes the same proof', async () => {
    expect(existsSync(ova)).toBe(true);
    const src = join(w.sources, `${NAME}.ova`);
    await copyFile(ova, src); // not cp under execFileSync: the in-process vm-manager must keep its event loop
    const before = (w.svc.list()[0]?.manifest.packages ?? {})['docker.io'];
    const id = w.svc.start({ source: src, name: 'ctl-again' });
    const job = await w.jobs.wait(id);
    const log = w.jobs.log(id).map((l) => l.message);
    if (job.state !== 'succeeded') console.log(log.slice(-60).join('\n'));
    expect(job.state, job.error?.message).toBe('succeeded');
    const r = job.result as { manifest: { docker: string; packages: Record<string, string>; stages: Record<string, number> }; proof: { passed: boolean; dockerEnabled: string; attestation?: { required: boolean; verified: boolean | null; message: string; events: { checked: number } | null } } };
    expect(r.manifest.docker).toBe('present');
    expect(r.manifest.packages).toEqual({}); // nothing fetched or installed: docker.io, open-vm-tools, curl and tpm2-tools were there
    expect(log.find((l) => l.startsWith('inspect: ') && l.includes('runtime'))).toContain('runtime docker.io');
    expect(r.proof.passed).toBe(true);
    // the converted-back disk's references are made at its import too: attested again
    expect(r.proof.attestation, JSON.stringify(r.proof.attestation)).toMatchObject({ required: true, verified: true });
    expect(r.proof.attestation!.message).toMatch(/^initrd quote verified; event log replayed/);
    expect(r.proof.attestation!.events!.checked).toBeGreaterThan(20);
    expect(r.proof.dockerEnabled).toBe('enabled');
    // the version in the image after the bake is the one before (the files in one appliance boot)
    const out = join(w.home, 'again-files');
    mkdirSync(out);
    execFileSync('virt-copy-out', ['-a', join(w.state, 'images', 'ctl-again', 'base.qcow2'), '/etc/povdesk/template-manifest.json', '/var/lib/dpkg/status', '/etc/machine-id', out], {
      env: guestfsEnv(),
    });
    const after = JSON.parse(readFileSync(join(out, 'template-manifest.json'), 'utf8'));
    expect(after.docker).toBe('present');
    // the source by its file name only: no host path (a user's name) inside the template (issue 33 item 7)
    expect(after.source).toBe(`${NAME}.ova`);
    expect(JSON.stringify(after)).not.toContain(w.home);
    const status = readFileSync(join(out, 'status'), 'utf8');
    const version = /Package: docker\.io\n(?:.+\n)*?Version: (.+)/.exec(status)?.[1];
    expect(version).toBe(before);
    expect(readFileSync(join(out, 'machine-id'), 'utf8')).toBe(''); // each VM of the template makes its own
    console.log(`bake from OVA: stages ${JSON.stringify(r.manifest.stages)}`);
  }, 1_500_000);
});
