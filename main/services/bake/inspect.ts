/**
 * What is on the disk, asked of libguestfs inside the bake's appliance (which then stays open for
 * the install): the guest OS, its init, free space, dpkg's status file (to fetch exactly what it
 * lacks) and whether a container runtime is installed. Refuses what the runner cannot serve
 * (Windows, no systemd, unknown) with the reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { GuestSession, markedCommands, splitAnswers } from './fish';
import { fishWord, runGuestfs } from './tools';

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

/**
 * One read-only guestfish script run (one appliance boot, nothing mounted): `-`-prefixed commands
 * may fail without ending the script; each command's output is separated by a marker line, so the
 * answers come back in order.
 */
async function fish(disk: string, commands: string[], o: { signal?: AbortSignal }): Promise<string[]> {
  const script = ['run', ...markedCommands(commands)].join('\n') + '\n';
  const out = await runGuestfs('guestfish', ['--ro', '-a', disk], {
    signal: o.signal,
    input: script,
    what: 'guestfish (inspection)',
  });
  return splitAnswers(out);
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

const WINDOWS_DIRS = ['/Windows/System32', '/WINDOWS/system32', '/Windows/system32', '/windows/system32'];

/** No OS found by inspection: Windows without a readable registry is still Windows (its system directory on NTFS). */
async function noOs(disk: string, signal?: AbortSignal): Promise<never> {
  const [fsOut = ''] = await fish(disk, ['-list-filesystems'], { signal });
  const ntfs = fsOut
    .split('\n')
    .map((l) => l.split(/:\s*/))
    .filter(([dev, type]) => dev && type === 'ntfs')
    .map(([dev]) => dev!);
  for (const dev of ntfs) {
    const found = await fish(disk, [`-mount-ro ${dev} /`, ...WINDOWS_DIRS.map((p) => `-is-dir ${p}`)], { signal });
    if (found.slice(1).some((x) => x.trim() === 'true')) throw windows(`\\Windows\\System32 on the NTFS file system ${dev}`);
  }
  const kinds =
    fsOut
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(/:\s*/)[1])
      .join(', ') || 'none';
  throw refuse(`no operating system found on the image (file systems: ${kinds}): pick a bootable Linux image with systemd`);
}

const windows = (what: string) =>
  refuse(`the image holds Windows (${what}): the control-node runner needs a Linux guest with systemd; pick the template's Linux VM`);

/**
 * The bake's appliance (`GuestSession`: guestfish -i, the guest mounted read-write on the private
 * working copy) and what inspection found. The session stays open for the install (customize.ts),
 * so a bake boots one appliance; a second and third boot only when no OS was found (noOs). The
 * caller closes the session, or aborts it when the bake stops.
 */
export async function openGuest(disk: string, work: string, signal?: AbortSignal): Promise<{ guest: GuestFacts; session: GuestSession }> {
  const dpkgStatus = join(work, 'dpkg-status');
  let session: GuestSession | null = null;
  let answers: string[];
  try {
    session = await GuestSession.open(disk, { signal, what: 'guestfish (inspection)' });
    answers = await session.run([
      '-inspect-get-roots',
      '-cat /etc/os-release',
      '-is-file /lib/systemd/systemd followsymlinks:true',
      '-is-file /usr/lib/systemd/systemd followsymlinks:true',
      '-statvfs /',
      `-download /var/lib/dpkg/status ${fishWord(dpkgStatus)}`,
      ...WINDOWS_DIRS.map((p) => `-is-dir ${p}`),
    ]);
  } catch (e) {
    await session?.abort();
    if ((e as AppError).code === 'cancelled') throw e;
    if (/no operating system was found/i.test((e as Error).message)) return noOs(disk, signal);
    if (/multi-boot/i.test((e as Error).message)) throw refuse('the image holds several operating systems: bake an image with one');
    throw e;
  }
  try {
    return { guest: facts(answers, dpkgStatus), session };
  } catch (e) {
    await session.abort();
    throw e;
  }
}

function facts(answers: string[], dpkgStatus: string): GuestFacts {
  const [rootsOut = '', osRelease = '', sd1 = '', sd2 = '', statvfs = '', , ...win] = answers.map((x) => x.trim());
  if (win.some((x) => x === 'true')) throw windows(`\\Windows\\System32 on ${rootsOut.split('\n')[0] ?? 'its system volume'}`);
  const field = (k: string) => new RegExp(`^${k}=["']?([^"'\n]*)`, 'm').exec(osRelease)?.[1] ?? '';
  const distro = field('ID');
  const product = field('PRETTY_NAME') || distro || 'an unknown OS';
  if (!osRelease)
    throw refuse(`the image's OS has no /etc/os-release (${rootsOut || 'unknown root'}): the runner needs a Linux guest with systemd`);
  if (sd1 !== 'true' && sd2 !== 'true')
    throw refuse(
      `the image holds ${product} without systemd: the runner is a systemd service (Restart=always); pick an image with systemd`,
    );
  const debFamily = ['debian', 'ubuntu'].includes(distro) || /\b(debian|ubuntu)\b/.test(field('ID_LIKE'));
  if (!debFamily || !existsSync(dpkgStatus)) {
    throw refuse(
      `the image holds ${product} (${distro || 'unknown'}): this build installs Debian packages fetched on this host; bake a ` +
        `Debian or Ubuntu image`,
    );
  }
  const bsize = Number(/bsize: (\d+)/.exec(statvfs)?.[1] ?? 0);
  const bavail = Number(/bavail: (\d+)/.exec(statvfs)?.[1] ?? 0);
  const installed = parseDpkgStatus(readFileSync(dpkgStatus, 'utf8'));
  return {
    distro,
    version: field('VERSION_ID'),
    product,
    codename: field('VERSION_CODENAME'),
    packageFormat: 'deb',
    freeBytes: bsize * bavail,
    dpkgStatus,
    installed,
    runtime: RUNTIME_PACKAGES.find((p) => installed.has(p)) ?? null,
    cloudInit: installed.has('cloud-init'),
  };
}
