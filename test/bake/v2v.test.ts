/**
 * The OVA as someone else reads it: Debian's `virt-v2v -i ova` (a consumer that follows the OVF
 * standard and VMware's conventions) imports the OVA the export writes of the baked control-node
 * template and converts its disk; the converted disk boots in the vm-manager, where the guest's
 * runner answers the proof probe (the bake's own check: the runner's sha256, Docker enabled and a
 * container run, the preloaded agent image in Docker). The export is `writeExport`, the function
 * `bake.export` runs on a baked image's disk; the disk is the cached control-node image
 * (test/lab/control-node-image.ts).
 *
 * `npm test` always has virt-v2v read the OVA (`--print-source`: the OVF's name, memory, vCPUs,
 * firmware, disk controller and NIC as virt-v2v understands them, ~5 s). The conversion takes
 * 13–19 min under TCG here (it rewrites the guest's initramfs in its appliance): a quarter of the
 * suite's cold budget, so it runs in `npm run test:slow` (POVDESK_TEST_SLOW=1), and in `npm test`
 * only when its output is already cached beside the control-node disk (keyed by that disk's key,
 * the export writer's source and virt-v2v's version), where importing and booting it takes ~2 min.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerScript } from '../../main/services/control-node/runner';
import { writeExport } from '../../main/services/bake/ova';
import { proofBoot } from '../../main/services/bake/proof';
import { runGuestfs } from '../../main/services/bake/tools';
import { AGENT_REF } from '../lab/agent-image';
import { controlNodeDisk, controlNodeImageKey } from '../lab/control-node-image';
import { needs } from '../support/system';
import { tempDir } from '../support/temp-dirs';
import { bakeSkip, bakeWorld, CACHE, type BakeWorld } from './support';

const skip = bakeSkip() ?? needs(['virt-v2v', 'nbdkit', 'nbdcopy']);
const SLOW = process.env.POVDESK_TEST_SLOW === '1';

function cacheKey(): string {
  const h = createHash('sha256');
  h.update(controlNodeImageKey());
  h.update(readFileSync(join(process.cwd(), 'main/services/bake/ova.ts')));
  h.update(execFileSync('virt-v2v', ['--version']).toString());
  return h.digest('hex').slice(0, 16);
}

/** The cached control-node disk exported as `bake.export` writes it: the OVA and the disk's size. */
async function exported(log: (l: string) => void): Promise<{ ova: string; work: string; capacityBytes: number }> {
  const { disk } = await controlNodeDisk(log);
  const capacityBytes = (JSON.parse(execFileSync('qemu-img', ['info', '--output=json', disk]).toString()) as { 'virtual-size': number })[
    'virtual-size'
  ];
  const work = tempDir('povdesk-v2v-');
  const ova = (await writeExport({ name: 'v2v-cn', disk, capacityBytes, format: 'ova', dir: work }))[0]!.path;
  return { ova, work, capacityBytes };
}

/** Where the conversion of the current export is cached (present or not). */
const cachedConversion = () => join(CACHE, 'v2v', cacheKey(), 'disk.qcow2');

/** virt-v2v's conversion of the exported OVA: the converted qcow2 and what virt-v2v said (cached). */
async function converted(log: (l: string) => void): Promise<{ disk: string; said: string; capacityBytes: number; seconds: number | null }> {
  const out = cachedConversion();
  const dir = dirname(out);
  if (existsSync(out)) {
    const { disk } = await controlNodeDisk(log);
    const capacityBytes = (JSON.parse(execFileSync('qemu-img', ['info', '--output=json', disk]).toString()) as { 'virtual-size': number })[
      'virtual-size'
    ];
    return { disk: out, said: readFileSync(join(dir, 'virt-v2v.txt'), 'utf8'), capacityBytes, seconds: null };
  }
  // what virt-v2v printed, then the libvirt domain it wrote (the cached text is the same)
  const { ova, work, capacityBytes } = await exported(log);
  const target = join(work, 'out');
  mkdirSync(target);
  const t0 = Date.now();
  // the same libguestfs set-up as the bake's tools (direct backend, TCG, nothing left behind)
  const said = await runGuestfs('virt-v2v', ['-i', 'ova', ova, '-o', 'local', '-os', target, '-of', 'qcow2', '-on', 'v2v-cn'], {
    what: 'virt-v2v -i ova',
  });
  const seconds = Math.round((Date.now() - t0) / 1000);
  const xml = readFileSync(join(target, 'v2v-cn.xml'), 'utf8');
  const written = /<source file=['"]([^'"]+)['"]/.exec(xml)?.[1];
  if (!written || !existsSync(written)) throw new Error(`virt-v2v's domain XML names no disk it wrote:\n${xml}`);
  mkdirSync(dir, { recursive: true });
  const text = `${said}\n--- domain XML\n${xml}`;
  writeFileSync(join(dir, 'virt-v2v.txt'), text);
  // copied then renamed: a reader never sees half a disk
  await copyFile(written, `${out}.tmp-${process.pid}`);
  renameSync(`${out}.tmp-${process.pid}`, out);
  return { disk: out, said: text, capacityBytes, seconds };
}

describe.skipIf(skip !== null)('virt-v2v imports the exported OVA; the converted disk boots and its runner answers', () => {
  let w: BakeWorld;
  beforeAll(async () => {
    w = await bakeWorld();
  }, 120_000);
  afterAll(() => w?.close());

  it(
    'virt-v2v reads the exported OVA as the VM it describes: name, 4 GiB, 2 vCPUs, BIOS, a SCSI disk, a vmxnet3 NIC on the ' +
      'automatic network',
    async () => {
      // What virt-v2v reads here is the OVF and the disk's VMDK header, not the guest: a blank 64 MiB
      // disk exports in a second where the control-node disk takes a minute of compression.
      const work = tempDir('povdesk-v2v-src-');
      const disk = join(work, 'blank.qcow2');
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
      const ova = (await writeExport({ name: 'v2v-cn', disk, capacityBytes: 64 * 1024 ** 2, format: 'ova', dir: work }))[0]!.path;
      const said = await runGuestfs('virt-v2v', ['-i', 'ova', ova, '--print-source'], { what: 'virt-v2v -i ova --print-source' });
      const field = (name: string) => new RegExp(`^\\s*${name}: (.*)$`, 'm').exec(said)?.[1]?.trim();
      expect(field('source name'), said).toBe('v2v-cn');
      expect(field('hypervisor type')).toBe('vmware');
      expect(field('memory')).toBe('4294967296 (bytes)');
      expect(field('nr vCPUs')).toBe('2');
      expect(field('firmware')).toBe('bios');
      expect(said).toMatch(/^disks:\n\s*0 \[scsi\]$/m);
      expect(said).toMatch(/^NICs:\n\s*Bridge "automatic" \[vmxnet3\]$/m);
    },
    600_000,
  );

  // the conversion: `npm run test:slow`, or a cached one (see the file's comment)
  it.skipIf(skip !== null || (!SLOW && !existsSync(cachedConversion())))(
    'export → virt-v2v -i ova → import into the vm-manager → the proof probe answered',
    async () => {
      const c = await converted((l) => console.log(l));
      console.log(c.seconds === null ? 'virt-v2v: the cached conversion' : `virt-v2v converted the OVA in ${c.seconds} s`);
      // virt-v2v found the guest's OS and its virtio drivers, and read the OVF's size (2 vCPUs, 4096 MB)
      expect(c.said).toMatch(/Converting 12\.\d+ to run on KVM/);
      expect(c.said).toMatch(/This guest has virtio drivers installed/);
      expect(c.said).toContain("<libosinfo:os id='http://debian.org/debian/12'/>");
      expect(c.said).toContain("<memory unit='KiB'>4194304</memory>");
      expect(c.said).toContain('<vcpu>2</vcpu>');

      // imported as the lab imports the cached control-node disk: a copy in the manager's incoming folder
      const incoming = join(w.state, 'incoming', 'v2v-control-node.qcow2');
      mkdirSync(join(w.state, 'incoming'), { recursive: true });
      await copyFile(c.disk, incoming);
      await w.client.importImage(incoming, 'v2v-control-node');
      const proof = await proofBoot({
        client: w.client,
        image: 'v2v-control-node',
        diskGib: Math.ceil(c.capacityBytes / 1024 ** 3),
        expectRunnerSha256: createHash('sha256').update(runnerScript().script).digest('hex'),
        expectDocker: true,
        expectImages: [AGENT_REF],
        timeoutMs: 600_000,
        log: (l) => (l.startsWith('console:') ? undefined : console.log(l)),
      });
      expect(proof.passed, `${proof.message}\n${proof.consoleTail}`).toBe(true);
    },
    3_000_000,
  );
});
