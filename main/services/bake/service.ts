/**
 * bake.start and bake.export as jobs. A bake works in a private directory and writes
 * nothing lasting until the proof passed: the image enters the vm-manager's store through its API
 * (import from a file under its state dir), is proven there, and is deleted again when the proof
 * fails or the job is cancelled. The build manifest and the proof are kept under
 * <home>/templates/baked/<name>/.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { pidExists } from '../../lib/procs';
import {
  bakeManifest,
  proofResult,
  type BakeArgs,
  type BakedImage,
  type BakeManifest,
  type BakeStage,
  type ProofResult,
} from '../../../shared/contract/bake';
import type { JobContext, JobRunner } from '../jobs/runner';
import type { VmManagerClient } from '../../vm-api/client';
import { RUNNER_PATH, UNIT_NAME, runnerScript } from '../control-node/runner';
import { attestUnit } from './attest-agent';
import { customize } from './customize';
import { debianBase } from './debian';
import type { GuestSession } from './fish';
import { openGuest, type GuestFacts } from './inspect';
import { writeExport } from './ova';
import { fetchPackages, type FetchedPackage } from './packages';
import { checkPreloadImages } from './preload';
import { proofBoot, type ProofInput } from './proof';
import { growDisk } from './grow';
import { allowedSource, diskOf, workingCopy } from './source';
import { cancelled, sha256File } from './tools';

/** Room the install needs beyond the packages' own size (dpkg's unpack, logs, Docker's first state). */
const HEADROOM = 256 * 1024 ** 2;

export interface BakeDeps {
  home: string;
  jobs: JobRunner;
  /** the local vm-manager: a client and its state dir (imports are read from under it) */
  vmm: () => Promise<{ client: VmManagerClient; stateDir: string }>;
  /** directories a source image may be read from */
  allowedDirs: string[];
  /** host package cache and the Debian base cache (default <home>/templates/cache) */
  cacheDir?: string;
  /** proof boot time limit */
  proofTimeoutMs?: number;
  /** the proof (default proofBoot: a boot of the image); bake.test proves its re-bake by comparing it with an image a boot proved */
  proof?: (o: ProofInput) => Promise<ProofResult>;
  log?: { info(msg: string, meta?: object): void };
}

const STAGE_WEIGHT: Record<BakeStage, [number, number]> = {
  source: [0, 0.3],
  inspect: [0.3, 0.4],
  packages: [0.4, 0.45],
  bake: [0.45, 0.7],
  register: [0.7, 0.75],
  proof: [0.75, 1],
};

export class BakeService {
  constructor(private readonly d: BakeDeps) {}

  private get root() {
    return join(this.d.home, 'templates');
  }
  private get cache() {
    return this.d.cacheDir ?? join(this.root, 'cache');
  }
  bakedDir(name: string) {
    return join(this.root, 'baked', name);
  }

  list(): BakedImage[] {
    const dir = join(this.root, 'baked');
    if (!existsSync(dir)) return [];
    const out: BakedImage[] = [];
    for (const name of readdirSync(dir).sort()) {
      try {
        const manifest = bakeManifest.parse(JSON.parse(readFileSync(join(dir, name, 'manifest.json'), 'utf8')));
        const proofFile = join(dir, name, 'proof.json');
        const proof = existsSync(proofFile) ? proofResult.parse(JSON.parse(readFileSync(proofFile, 'utf8'))) : null;
        const exportsDir = join(this.root, 'exports', name);
        const exports = existsSync(exportsDir)
          ? readdirSync(exportsDir)
              .filter((f) => !f.startsWith('.'))
              .map((f) => join(exportsDir, f))
          : [];
        out.push({ name, manifest, proof, exports });
      } catch {
        // a half-written entry is not listed
      }
    }
    return out;
  }

  start(args: BakeArgs): string {
    const title = `Bake template ${args.name}`;
    return this.d.jobs.start({ kind: 'bake.start', title, subject: `template:${args.name}` }, (job) => this.bakeWork(job, args));
  }

  /** The whole bake; exported for tests that run it without the job runner. */
  async bakeWork(job: JobContext, args: BakeArgs): Promise<{ image: string; manifest: BakeManifest; proof: ProofResult }> {
    // Resolve the source before anything is made or started: a bad path changes nothing.
    const srcPath = typeof args.source === 'string' ? allowedSource(args.source, this.d.allowedDirs) : null;
    if (args.preloadImages?.length && args.docker === 'skip')
      throw new AppError('invalid_request', 'preloadImages needs Docker in the guest: leave docker at "auto"');
    const preload = await checkPreloadImages(args.preloadImages ?? [], this.d.allowedDirs, job.signal);
    if (existsSync(this.bakedDir(args.name))) throw new AppError('conflict', `a baked template "${args.name}" exists: pick another name`);
    const { client, stateDir } = await this.d.vmm();
    const images = await client.localImages();
    if (images.some((i) => i.name === args.name))
      throw new AppError('conflict', `an image "${args.name}" exists in the local vm-manager: pick another name`);
    this.sweepStale(stateDir);
    const work = join(this.root, 'work', `${process.pid}-${job.id}`);
    const incoming = join(stateDir, 'incoming', `${process.pid}-${job.id}-${args.name}.qcow2`);
    let registered = false;
    // the bake's one libguestfs appliance, open from inspection to the end of the install
    let session: GuestSession | null = null;
    const times: Record<string, number> = {};
    let stageStart = Date.now();
    const stage = (s: BakeStage, msg: string) => {
      cancelled(job.signal, `bake of ${args.name}`);
      stageStart = Date.now();
      job.progress(s, STAGE_WEIGHT[s][0], msg);
      job.log(`${s}: ${msg}`);
    };
    const done = (s: BakeStage) => (times[s] = Math.round((Date.now() - stageStart) / 100) / 10);
    mkdirSync(work, { recursive: true });
    try {
      const disk = join(work, 'disk.qcow2');
      let sourceLabel: string;
      let baseSha256: string;
      stage('source', srcPath ? `reading ${srcPath}` : 'building a minimal Debian bookworm from Debian packages');
      if (srcPath) {
        await workingCopy(await diskOf(srcPath, work, job.signal), disk, job.signal);
        // the manifest goes into the guest (and the OVA sent to Skytap): the file's name, not the
        // host path with the user's name in it
        sourceLabel = basename(srcPath);
        baseSha256 = await sha256File(srcPath);
      } else {
        const base = await debianBase({
          codename: 'bookworm',
          cacheDir: join(this.cache, 'debian'),
          workDir: work,
          signal: job.signal,
          log: (l) => job.log(l),
          progress: (m) => job.progress('source', 0.05, m),
        });
        job.log(`source: Debian base ${base.cached ? 'from the cache' : 'built'} (${base.key})`);
        copyFileSync(base.disk, disk);
        sourceLabel = `debian:bookworm (${base.key})`;
        baseSha256 = await sha256File(base.disk);
      }
      if (args.sizeGib) await growDisk(disk, args.sizeGib, job.signal);
      done('source');

      stage('inspect', 'detecting the guest OS (libguestfs inspection)');
      const opened = await openGuest(disk, work, job.signal);
      session = opened.session;
      const guest = opened.guest;
      job.log(
        `inspect: ${guest.product} (${guest.distro} ${guest.version}, ${guest.codename}); ` +
          `runtime ${guest.runtime ?? 'none'}; ${Math.round(guest.freeBytes / 1024 ** 2)} MiB free`,
      );
      done('inspect');

      stage('packages', 'fetching the guest packages on this host');
      const wanted = this.wanted(args, guest);
      const debs = await fetchPackages({
        wanted,
        dpkgStatus: guest.dpkgStatus,
        guestCodename: guest.codename,
        cacheDir: join(this.cache, 'debs'),
        outDir: join(work, 'debs'),
        signal: job.signal,
        log: (l) => job.log(l),
      });
      // a preloaded tar stays on the template's disk, and its layers land beside it at first boot
      const need = debs.reduce((n, p) => n + p.bytes, 0) * 4 + preload.reduce((n, p) => n + p.bytes, 0) * 3 + HEADROOM;
      if (need > guest.freeBytes) {
        throw new AppError(
          'invalid_request',
          `the image has ${Math.round(guest.freeBytes / 1024 ** 2)} MiB free on / and the bake needs ` +
            `about ${Math.round(need / 1024 ** 2)} MiB: pass sizeGib to grow the disk`,
        );
      }
      for (const p of preload)
        job.log(
          `preload: ${p.path} (${p.refs.join(', ')}; ${p.bytes} bytes, sha256 ${p.sha256}): loaded at each VM's first boot, ` +
            `before the runner`,
        );
      job.log(`packages: ${debs.length} .deb (${Math.round(debs.reduce((n, p) => n + p.bytes, 0) / 1024 ** 2)} MiB)`);
      done('packages');

      stage('bake', 'installing the runner, the attestation agent, Docker and open-vm-tools (in the appliance inspection booted)');
      const runner = runnerScript();
      const agent = await client.attestAgent();
      const manifest = this.manifest(args, sourceLabel, baseSha256, guest, debs, runner.sha256, times);
      await customize(session, {
        work,
        debsDir: debs.length ? join(work, 'debs') : null,
        runner,
        manifest,
        enableDocker: args.docker !== 'skip',
        preloadImages: preload.map((p) => p.path),
        attest: { script: agent.script, unit: attestUnit(agent.pcrs.initrd) },
        log: (l) => job.log(l),
      });
      session = null; // closed: the disk is unmounted and synced
      done('bake');

      stage('register', 'importing the baked disk into the local vm-manager');
      mkdirSync(join(stateDir, 'incoming'), { recursive: true });
      renameSync(disk, incoming);
      const img = await client.importImage(incoming, args.name);
      registered = true;
      rmSync(incoming, { force: true });
      // The import made its reference measurements from the disk (its GRUB, kernel, initrd): then
      // the proof boot runs attested. A disk they could not be made for says why, and boots without.
      const policy = (await client.image(args.name)).povdesk?.policy as
        { references?: unknown; unpredictable?: string | null } | null | undefined;
      const attest = policy?.references
        ? true
        : `the image has no reference measurements: ${policy?.unpredictable ?? 'its manager does not make them'}`;
      job.log(
        attest === true
          ? 'register: reference measurements made from the disk; the proof boot runs attested'
          : `register: ${attest}; the proof boot runs without attestation`,
      );
      done('register');

      stage('proof', 'booting the baked image; waiting for its runner to run the probe');
      const proof = await (this.d.proof ?? proofBoot)({
        client,
        image: args.name,
        diskGib: Math.max(1, Math.ceil((img.virtualSizeBytes ?? 0) / 1024 ** 3)),
        attest,
        expectRunnerSha256: runner.sha256,
        expectDocker: args.docker !== 'skip',
        expectImages: preload.flatMap((p) => p.refs),
        timeoutMs: this.d.proofTimeoutMs,
        signal: job.signal,
        onVm: (id) => job.progress('proof', STAGE_WEIGHT.proof[0], `proof VM ${id}`),
        log: (l) => job.log(l),
      });
      done('proof');
      if (!proof.passed) throw new AppError('internal', `${proof.message}\n--- console tail ---\n${proof.consoleTail}`, { proof });
      const final = { ...manifest, stages: times };
      const dir = this.bakedDir(args.name);
      const staged = `${dir}.tmp-${job.id}`;
      mkdirSync(staged, { recursive: true });
      writeFileSync(join(staged, 'manifest.json'), JSON.stringify(final, null, 2) + '\n');
      writeFileSync(join(staged, 'proof.json'), JSON.stringify(proof, null, 2) + '\n');
      renameSync(staged, dir);
      job.progress('proof', 1, proof.message);
      return { image: args.name, manifest: final, proof };
    } catch (e) {
      await session?.abort();
      if (registered)
        await client.deleteImage(args.name).catch((err: Error) => job.log(`could not remove image ${args.name}: ${err.message}`, 'warn'));
      throw e;
    } finally {
      rmSync(work, { recursive: true, force: true });
      rmSync(incoming, { force: true });
    }
  }

  /** Work dirs and incoming disks of bakes whose process died (a crash or a kill): `<pid>-…` with no such pid. */
  private sweepStale(stateDir: string) {
    for (const dir of [join(this.root, 'work'), join(stateDir, 'incoming')]) {
      if (!existsSync(dir)) continue;
      for (const n of readdirSync(dir)) {
        const pid = Number(/^(\d+)-/.exec(n)?.[1] ?? 0);
        if (pid && !pidExists(pid)) {
          rmSync(join(dir, n), { recursive: true, force: true });
          this.d.log?.info('removed what an interrupted bake left', { path: join(dir, n) });
        }
      }
    }
  }

  private wanted(args: BakeArgs, guest: GuestFacts): string[] {
    const want = new Set<string>(args.extraPackages ?? []);
    if (args.docker !== 'skip' && !guest.runtime) {
      want.add('docker.io');
      // Debian's kernel enables AppArmor: without apparmor_parser (a Recommends, which the bake
      // does not install) dockerd cannot load docker-default and every `docker run` fails.
      want.add('apparmor');
    }
    if (!guest.installed.has('open-vm-tools')) want.add('open-vm-tools');
    if (!guest.installed.has('curl')) want.add('curl');
    // the attestation agent's TPM tools (attest-agent.ts); the guest's quote, log and nonce go over curl
    if (!guest.installed.has('tpm2-tools')) want.add('tpm2-tools');
    for (const p of want) if (guest.installed.has(p)) want.delete(p);
    return [...want].sort();
  }

  private manifest(
    args: BakeArgs,
    source: string,
    baseSha256: string,
    guest: GuestFacts,
    debs: FetchedPackage[],
    runnerSha: string,
    stages: Record<string, number>,
  ): BakeManifest {
    return {
      name: args.name,
      createdAt: new Date().toISOString(),
      source,
      baseSha256,
      guest: { distro: guest.distro, version: guest.version, product: guest.product, codename: guest.codename },
      runner: { path: RUNNER_PATH, sha256: runnerSha, unit: UNIT_NAME },
      docker: args.docker === 'skip' ? 'skipped' : guest.runtime ? 'present' : 'installed',
      packages: Object.fromEntries(debs.map((p) => [p.name, p.version])),
      cloudInit: guest.cloudInit ? 'disabled' : 'absent',
      stages,
    };
  }

  exportImage(args: { imageId: string; format: 'ova' | 'ovf' | 'vmdk'; dir?: string | undefined }): string {
    return this.d.jobs.start(
      { kind: 'bake.export', title: `Export ${args.imageId} as ${args.format.toUpperCase()}`, subject: `template:${args.imageId}` },
      (job) => this.exportWork(job, args),
    );
  }

  async exportWork(job: JobContext, args: { imageId: string; format: 'ova' | 'ovf' | 'vmdk'; dir?: string | undefined }) {
    if (!existsSync(join(this.bakedDir(args.imageId), 'manifest.json'))) {
      throw new AppError('not_found', `no baked template "${args.imageId}": bake it first (bake.start)`);
    }
    const { client } = await this.d.vmm();
    const images = await client.localImages();
    const img = images.find((i) => i.name === args.imageId);
    if (!img?.path || !img.disk) throw new AppError('not_found', `the local vm-manager has no disk image "${args.imageId}": bake it again`);
    const dest = args.dir ? allowedSource(args.dir, this.d.allowedDirs) : join(this.root, 'exports', args.imageId);
    if (args.dir && !existsSync(dest)) throw new AppError('invalid_request', `${dest} does not exist`);
    mkdirSync(dest, { recursive: true });
    const tmp = join(dest, `.export-${job.id}`);
    mkdirSync(tmp);
    try {
      job.progress('export', 0.1, `writing a stream-optimized VMDK of ${args.imageId}`);
      const files = await writeExport({
        name: args.imageId,
        disk: join(img.path, img.disk),
        capacityBytes: img.virtualSizeBytes ?? 0,
        format: args.format,
        dir: tmp,
        signal: job.signal,
      });
      const out = files.map((f) => {
        const final = join(dest, f.path.slice(tmp.length + 1));
        renameSync(f.path, final);
        return { ...f, path: final };
      });
      for (const f of out) job.log(`wrote ${f.path} (${f.bytes} bytes, sha256 ${f.sha256})`);
      job.progress('export', 1, `exported ${out.map((f) => f.path).join(', ')}`);
      return { files: out };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}
