/**
 * What is on the disk, asked of libguestfs (read-only, inside its appliance): the guest OS, its
 * init, free space, dpkg's status file (to fetch exactly what it lacks) and whether a container
 * runtime is installed. Refuses what the runner cannot serve (Windows, no systemd, unknown) with
 * the reason.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { guestfsEnv, run } from './tools';

export interface GuestFacts {
  distro: string;
  version: string;
  product: string;
  codename: string;
  packageFormat: string;
  freeBytes: number;
  /** dpkg status file copied out of the guest */
  dpkgStatus: string;
  /** installed packages: name → version */
  installed: Map<string, string>;
  /** the installed runtime package, if any */
  runtime: string | null;
  cloudInit: boolean;
}

/** Packages that make `docker` resolve on a Debian-family guest. */
export const RUNTIME_PACKAGES = ['docker.io', 'docker-ce', 'moby-engine', 'podman-docker'];

class Fish {
  private pid = '';
  constructor(private readonly env: NodeJS.ProcessEnv, private readonly signal?: AbortSignal) {}
  async start(disk: string) {
    const out = await run('guestfish', ['--listen', '--ro', '-a', disk], { env: this.env, signal: this.signal, what: 'guestfish --listen' });
    const m = /GUESTFISH_PID=(\d+)/.exec(out);
    if (!m?.[1]) throw new AppError('internal', `guestfish --listen printed no PID: ${out.slice(0, 200)}`);
    this.pid = m[1];
  }
  cmd(...args: string[]): Promise<string> {
    return run('guestfish', [`--remote=${this.pid}`, '--', ...args], { env: this.env, signal: this.signal, what: `guestfish ${args[0]}` });
  }
  async tryCmd(...args: string[]): Promise<string | null> {
    try {
      return await this.cmd(...args);
    } catch (e) {
      if ((e as AppError).code === 'cancelled') throw e;
      return null;
    }
  }
  async stop() {
    if (!this.pid) return;
    await this.tryCmd('exit');
    try {
      process.kill(Number(this.pid), 'SIGKILL');
    } catch {
      // exited
    }
  }
}

export function parseDpkgStatus(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const block of text.split(/\n\n+/)) {
    const name = /^Package: (.+)$/m.exec(block)?.[1];
    const status = /^Status: (.+)$/m.exec(block)?.[1];
    const version = /^Version: (.+)$/m.exec(block)?.[1];
    if (name && version && status === 'install ok installed') out.set(name.trim(), version.trim());
  }
  return out;
}

const refuse = (why: string) => new AppError('unsupported', why);

export async function inspectGuest(disk: string, work: string, signal?: AbortSignal): Promise<GuestFacts> {
  const fish = new Fish(guestfsEnv(), signal);
  await fish.start(disk);
  try {
    await fish.cmd('run');
    const roots = (await fish.cmd('inspect-os')).split('\n').filter(Boolean);
    if (roots.length === 0) {
      // Windows without a readable registry is still Windows: look for its system directory on NTFS.
      const fsList = (await fish.cmd('list-filesystems')).split('\n').filter(Boolean);
      for (const line of fsList) {
        const [dev, type] = line.split(/:\s*/);
        if (type !== 'ntfs' || !dev) continue;
        if ((await fish.tryCmd('mount-ro', dev, '/')) === null) continue;
        const sys = await fish.tryCmd('case-sensitive-path', '/windows/system32');
        const isWin = sys !== null && (await fish.tryCmd('is-dir', sys.trim())) === 'true\n';
        await fish.tryCmd('umount-all');
        if (isWin) throw refuse(`the image holds Windows (\\Windows\\System32 on the NTFS file system ${dev}): the control-node runner needs a Linux guest with systemd; pick the template's Linux VM`);
      }
      const kinds = fsList.map((l) => l.split(/:\s*/)[1]).join(', ') || 'none';
      throw refuse(`no operating system found on the image (file systems: ${kinds}): pick a bootable Linux image with systemd`);
    }
    if (roots.length > 1) throw refuse(`the image holds ${roots.length} operating systems (${roots.join(', ')}): bake an image with one`);
    const root = roots[0]!;
    const type = (await fish.cmd('inspect-get-type', root)).trim();
    const distro = (await fish.cmd('inspect-get-distro', root)).trim();
    const product = (await fish.cmd('inspect-get-product-name', root)).trim();
    if (type === 'windows') throw refuse(`the image holds ${product || 'Windows'}: the control-node runner needs a Linux guest with systemd; pick the template's Linux VM`);
    if (type !== 'linux') throw refuse(`the image holds ${product || type} (${type}), which the runner cannot serve: it needs Linux with systemd`);
    const major = (await fish.cmd('inspect-get-major-version', root)).trim();
    const pkgFormat = (await fish.cmd('inspect-get-package-format', root)).trim();
    const mps = (await fish.cmd('inspect-get-mountpoints', root))
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(': '))
      .sort((a, b) => (a[0] ?? '').length - (b[0] ?? '').length);
    for (const [mp, dev] of mps) if (mp && dev) await fish.tryCmd('mount-ro', dev, mp);
    const hasSystemd = (await fish.tryCmd('is-file', '/lib/systemd/systemd', 'followsymlinks:true')) === 'true\n'
      || (await fish.tryCmd('is-file', '/usr/lib/systemd/systemd', 'followsymlinks:true')) === 'true\n';
    if (!hasSystemd) throw refuse(`the image holds ${product} without systemd: the runner is a systemd service (Restart=always); pick an image with systemd`);
    if (pkgFormat !== 'deb' || !['debian', 'ubuntu'].includes(distro)) {
      throw refuse(`the image holds ${product} (${distro}, ${pkgFormat} packages): this build installs Debian packages fetched on this host; bake a Debian or Ubuntu image`);
    }
    const osRelease = (await fish.tryCmd('cat', '/etc/os-release')) ?? '';
    const codename = /^VERSION_CODENAME=["']?([a-z]+)/m.exec(osRelease)?.[1] ?? '';
    const statvfs = await fish.cmd('statvfs', '/');
    const bsize = Number(/bsize: (\d+)/.exec(statvfs)?.[1] ?? 0);
    const bavail = Number(/bavail: (\d+)/.exec(statvfs)?.[1] ?? 0);
    const dpkgStatus = join(work, 'dpkg-status');
    await fish.cmd('download', '/var/lib/dpkg/status', dpkgStatus);
    const { readFileSync } = await import('node:fs');
    const installed = parseDpkgStatus(readFileSync(dpkgStatus, 'utf8'));
    writeFileSync(join(work, 'installed.json'), JSON.stringify(Object.fromEntries(installed), null, 1));
    const cloudInit = installed.has('cloud-init');
    return {
      distro, version: major, product, codename, packageFormat: pkgFormat, freeBytes: bsize * bavail, dpkgStatus, installed,
      runtime: RUNTIME_PACKAGES.find((p) => installed.has(p)) ?? null, cloudInit,
    };
  } finally {
    await fish.stop();
  }
}
