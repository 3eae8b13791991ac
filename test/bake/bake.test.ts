/**
 * Real bakes, real boots: a minimal Debian from Debian's packages is baked (runner, docker.io,
 * open-vm-tools in libguestfs's appliance with no guest network, the test agent's image
 * preloaded), boots under TCG in the local vm-manager (OVMF + swtpm, the disk as the manager boots
 * any imported disk), and its runner fetches the probe from the metadata service and runs it with
 * the preloaded image in Docker. Then the export is checked byte by byte, and the OVA, taken back
 * as a source, is baked again: Docker present → left alone, and the converted-back disk passes the
 * same proof. That proof is the first one, not a second boot (~110 s of TCG): the re-baked disk
 * holds every file the proven one holds, byte for byte, but the manifest the bake rewrites, the same
 * boot sectors, and its import made the same reference measurements, so it boots as the proven
 * image booted (sameAsProven).
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
import { RUNNER_PATH, runnerScript } from '../../main/services/control-node/runner';
import { GUEST_MANIFEST } from '../../main/services/bake/customize';
import { BakeService } from '../../main/services/bake/service';
import type { ProofInput } from '../../main/services/bake/proof';
import type { ProofResult } from '../../shared/contract/bake';
import { openDisk } from '../../main/vm-manager/disk/image-file';
import { Ext4Fs } from '../../main/vm-manager/disk/ext4';
import { FatFs } from '../../main/vm-manager/disk/fat';
import { ESP_GUID, partitionReader, partitions } from '../../main/vm-manager/disk/partitions';
import { AGENT_REF } from '../lab/agent-image';
import { CONTROL_NODE_IMAGE as NAME, controlNodeBakeArgs, keepControlNodeDisk } from '../lab/control-node-image';
import { bakeSkip, bakeWorld, CACHE, leftovers, tarMembers, type BakeWorld } from './support';

const skip = bakeSkip();
const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');

const LINUX_FS = '0FC63DAF-8483-4772-8E79-3D69D8477DE4';
const imageDisk = (w: BakeWorld, name: string) => join(w.state, 'images', name, 'base.qcow2');

/** Files of a baked disk's root file system (the Linux partition of the base's GPT), as text; null where missing. */
function guestFiles(disk: string, paths: string[]): (string | null)[] {
  const d = openDisk(disk);
  try {
    const root = partitions(d).find((p) => p.type === LINUX_FS);
    if (!root) throw new Error(`${disk} has no Linux partition`);
    const fs = new Ext4Fs(partitionReader(d, root));
    return paths.map((p) => fs.readFile(p)?.toString('utf8') ?? null);
  } finally {
    d.close();
  }
}

/**
 * Everything of a baked disk a boot reads: the first 2 MiB (MBR boot code, GPT, GRUB's core image
 * in the BIOS boot partition), and every file of the ESP and of / by path (sha256 of its content;
 * a symlink by its presence). Read by the manager's own readers, yielding now and then: the
 * manager runs in this process.
 */
async function bootView(disk: string): Promise<Map<string, string>> {
  const d = openDisk(disk);
  try {
    const out = new Map<string, string>([
      [
        'sectors 0-4095',
        createHash('sha256')
          .update(d.read(0, 2 * 1024 ** 2))
          .digest('hex'),
      ],
    ]);
    let n = 0;
    const walk = async (fs: Ext4Fs | FatFs, at: string, dir: string): Promise<void> => {
      for (const e of fs.list(dir) ?? []) {
        const p = `${dir === '/' ? '' : dir}/${e.name}`;
        if (e.dir) await walk(fs, at, p);
        else
          out.set(
            `${at}${p}`,
            e.size === -1
              ? 'symlink'
              : createHash('sha256')
                  .update(fs.readFile(p) ?? 'unreadable')
                  .digest('hex'),
          );
        if (++n % 200 === 0) await new Promise((r) => setImmediate(r));
      }
    };
    const parts = partitions(d);
    const root = parts.find((p) => p.type === LINUX_FS);
    const esp = parts.find((p) => p.type === ESP_GUID);
    if (!root || !esp) throw new Error(`${disk} lacks its root file system or its ESP`);
    await walk(new FatFs(partitionReader(d, esp)), 'ESP:', '/');
    await walk(new Ext4Fs(partitionReader(d, root)), '', '/');
    return out;
  } finally {
    d.close();
  }
}

/**
 * The proof of a bake whose disk must boot as the image `proven` (proven by a boot) booted: the same boot
 * sectors and files but for the manifest the bake writes (the runner among them, whose sha256 is
 * checked against the app's too), and the same reference measurements made at its import (firmware,
 * GRUB, kernel, initrd, command lines), so an attested boot measures what the proven one measured.
 */
async function sameAsProven(w: BakeWorld, proven: string, o: ProofInput): Promise<ProofResult> {
  const started = Date.now();
  const problems: string[] = [];
  const first = w.svc.list().find((b) => b.name === proven)?.proof;
  if (!first?.passed) problems.push(`${proven} has no passed proof`);
  const refs = async (name: string) => {
    const r = ((await w.client.image(name)).povdesk?.policy as { references?: { firmware: unknown; boot: unknown } } | null)?.references;
    return r ? JSON.stringify({ firmware: r.firmware, boot: r.boot }) : null;
  };
  const [mine, theirs] = [await refs(o.image), await refs(proven)];
  if (!mine || mine !== theirs) problems.push(`the reference measurements differ from ${proven}'s`);
  const [a, b] = [await bootView(imageDisk(w, o.image)), await bootView(imageDisk(w, proven))];
  const differ = [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
  const others = differ.filter((k) => k !== GUEST_MANIFEST);
  if (others.length)
    problems.push(`${others.length} differ from ${proven}'s (only ${GUEST_MANIFEST} may): ${others.slice(0, 20).join(', ')}`);
  const runnerSha256 = a.get(RUNNER_PATH) ?? null;
  if (runnerSha256 !== o.expectRunnerSha256) problems.push(`the runner's sha256 is ${runnerSha256}, the app's is ${o.expectRunnerSha256}`);
  return {
    passed: problems.length === 0,
    at: new Date().toISOString(),
    seconds: Math.round((Date.now() - started) / 100) / 10,
    dockerEnabled: null,
    runnerSha256,
    consoleTail: '',
    message: problems.length
      ? problems.join('; ')
      : `the same ${a.size} files and boot sectors (but ${GUEST_MANIFEST}) and the same reference measurements as ${proven}, whose ` +
        `proof boot passed`,
    attestation: {
      required: o.attest === true,
      verified: null,
      message: `as ${proven}'s: ${first?.attestation?.message ?? 'none'}`,
      events: null,
    },
  };
}

describe.skipIf(skip !== null)('bake.start (real mmdebstrap, libguestfs, QEMU/TCG boots)', () => {
  let w: BakeWorld;
  let ova = '';

  beforeAll(async () => {
    w = await bakeWorld();
  });
  afterAll(async () => {
    await w?.close();
  });

  it(
    'bakes a minimal Debian: runner + docker.io + open-vm-tools + a preloaded image, proof boot green, docker enabled, nothing left ' +
      'over',
    async () => {
      const t0 = Date.now();
      const id = w.svc.start(controlNodeBakeArgs(w));
      const job = await w.jobs.wait(id);
      const log = w.jobs.log(id).map((l) => l.message);
      if (job.state !== 'succeeded') console.log(log.slice(-60).join('\n'));
      expect(job.state, job.error?.message).toBe('succeeded');
      const r = job.result as {
        manifest: { stages: Record<string, number>; docker: string; packages: Record<string, string>; runner: { sha256: string } };
        proof: {
          passed: boolean;
          dockerEnabled: string;
          runnerSha256: string;
          message: string;
          attestation?: { required: boolean; verified: boolean | null; message: string; events: { count: number; checked: number } | null };
        };
      };
      console.log(
        `bake debian: ${Math.round((Date.now() - t0) / 1000)} s, ` +
          `stages ${JSON.stringify(r.manifest.stages)}; ${log.find((l) => l.startsWith('source: Debian base'))}`,
      );
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
    },
    1_500_000,
  );

  it('exports an OVA Skytap takes: USTAR .ovf,.mf,.vmdk; streamOptimized VMDK v3; manifest verifies; OVF parses, sizes match', async () => {
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

  it('the OVA as a source again: Docker present is left alone (same version); the converted-back disk passes the same proof', async () => {
    expect(existsSync(ova)).toBe(true);
    const src = join(w.sources, `${NAME}.ova`);
    await copyFile(ova, src); // not cp under execFileSync: the in-process vm-manager must keep its event loop
    const before = (w.svc.list()[0]?.manifest.packages ?? {})['docker.io'];
    const again = new BakeService({
      home: w.home,
      jobs: w.jobs,
      allowedDirs: [w.sources],
      cacheDir: CACHE,
      vmm: async () => ({ client: w.client, stateDir: w.state }),
      proof: (o) => sameAsProven(w, NAME, o),
    });
    const id = again.start({ source: src, name: 'ctl-again' });
    const job = await w.jobs.wait(id);
    const log = w.jobs.log(id).map((l) => l.message);
    if (job.state !== 'succeeded') console.log(log.slice(-60).join('\n'));
    expect(job.state, job.error?.message).toBe('succeeded');
    const r = job.result as {
      manifest: { docker: string; packages: Record<string, string>; stages: Record<string, number> };
      proof: ProofResult;
    };
    expect(r.manifest.docker).toBe('present');
    expect(r.manifest.packages).toEqual({}); // nothing fetched or installed: docker.io, open-vm-tools, curl and tpm2-tools were there
    expect(log.find((l) => l.startsWith('inspect: ') && l.includes('runtime'))).toContain('runtime docker.io');
    // the converted-back, re-baked disk boots as the proven one: its files, boot sectors and reference
    // measurements (made at its import too, so it would be attested again) are the proven image's
    expect(r.proof.passed, r.proof.message).toBe(true);
    expect(r.proof.message).toContain(`and the same reference measurements as ${NAME}, whose proof boot passed`);
    expect(r.proof.attestation).toMatchObject({ required: true });
    expect(r.proof.runnerSha256).toBe(runnerScript().sha256);
    // the version in the image after the bake is the one before (read from the image's disk by the
    // manager's own ext4 reader: no libguestfs appliance launch, ~20 s under TCG, for three files)
    const [manifest, status, machineId] = guestFiles(imageDisk(w, 'ctl-again'), [
      '/etc/povdesk/template-manifest.json',
      '/var/lib/dpkg/status',
      '/etc/machine-id',
    ]);
    const after = JSON.parse(manifest!);
    expect(after.docker).toBe('present');
    // the source by its file name only: no host path (a user's name) inside the template (issue 33 item 7)
    expect(after.source).toBe(`${NAME}.ova`);
    expect(JSON.stringify(after)).not.toContain(w.home);
    const version = /Package: docker\.io\n(?:.+\n)*?Version: (.+)/.exec(status!)?.[1];
    expect(version).toBe(before);
    expect(machineId).toBe(''); // each VM of the template makes its own
    console.log(`bake from OVA: stages ${JSON.stringify(r.manifest.stages)}`);
  }, 1_500_000);
});
