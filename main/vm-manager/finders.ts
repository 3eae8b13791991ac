/**
 * Where QEMU, swtpm and the UEFI firmware live on each platform. PATH first, then the places the
 * usual installers put them, because an app started from the macOS Finder or the Windows Start
 * menu does not get a terminal's PATH:
 * - macOS: Homebrew (/opt/homebrew on Apple Silicon, /usr/local on Intel, or $HOMEBREW_PREFIX) and
 *   MacPorts (/opt/local); Homebrew's qemu ships the edk2 firmware in share/qemu.
 * - Windows: the QEMU installer (%ProgramFiles%\qemu, firmware in its share folder); swtpm has no
 *   official Windows build, so an MSYS2 install is looked for.
 * - Linux: the distributions' package paths (Debian/Ubuntu, Fedora, Arch).
 * Every function takes the platform, environment and a root prefix, so tests run them against
 * fake directory trees.
 */
import { existsSync, statSync } from 'node:fs';
import { delimiter as hostDelimiter, join } from 'node:path';

export interface FindOptions {
  platform?: NodeJS.Platform;
  arch?: string;
  env?: NodeJS.ProcessEnv;
  /** Prefix for the fixed absolute locations (tests point it at a fake tree). */
  root?: string;
}

const opts = (o: FindOptions = {}) => ({
  platform: o.platform ?? process.platform,
  arch: o.arch ?? process.arch,
  env: o.env ?? process.env,
  root: o.root ?? '',
});

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Homebrew and MacPorts prefixes, most specific first. */
function macPrefixes(o: ReturnType<typeof opts>): string[] {
  const fixed = ['/opt/homebrew', '/usr/local', '/opt/local'].map((p) => o.root + p);
  return [...new Set([...(o.env.HOMEBREW_PREFIX ? [o.env.HOMEBREW_PREFIX] : []), ...fixed])];
}

function windowsDirs(o: ReturnType<typeof opts>, sub: string[]): string[] {
  const bases = [o.env.ProgramFiles, o.env['ProgramFiles(x86)'], o.env.ProgramW6432].filter((x): x is string => !!x);
  return [...new Set(bases)].map((b) => join(b, ...sub));
}

/** Folders searched after PATH for a tool. */
export function toolDirs(o: FindOptions = {}): string[] {
  const x = opts(o);
  if (x.platform === 'darwin') return macPrefixes(x).flatMap((p) => [join(p, 'bin'), join(p, 'sbin')]);
  if (x.platform === 'win32') {
    const drive = x.env.SystemDrive ?? 'C:';
    return [
      ...windowsDirs(x, ['qemu']),
      ...windowsDirs(x, ['swtpm', 'bin']),
      join(x.root + drive, 'msys64', 'ucrt64', 'bin'),
      join(x.root + drive, 'msys64', 'usr', 'bin'),
    ];
  }
  // A Linux desktop session hands apps the user's PATH; only the sbin folders may be missing from it.
  return ['/usr/local/sbin', '/usr/sbin', '/sbin'].map((p) => x.root + p);
}

/** The program's path: PATH first (with PATHEXT on Windows), then toolDirs; null when absent. */
export function findTool(cmd: string, o: FindOptions = {}): string | null {
  const x = opts(o);
  const delimiter = x.platform === 'win32' ? ';' : x.platform === process.platform ? hostDelimiter : ':';
  const exts =
    x.platform === 'win32'
      ? [
          '',
          ...(x.env.PATHEXT ?? '.EXE;.CMD;.BAT')
            .split(';')
            .filter(Boolean)
            .map((e) => e.toLowerCase()),
        ]
      : [''];
  const path = (x.env.PATH ?? x.env.Path ?? '').split(delimiter).filter(Boolean);
  for (const dir of [...path, ...toolDirs(o)]) {
    for (const ext of exts) {
      const p = join(dir, cmd + ext);
      if (isFile(p)) return p;
    }
  }
  return null;
}

/** [code, vars] pairs of x86_64 UEFI firmware, in order of preference. */
export function firmwareCandidates(o: FindOptions = {}): [code: string, vars: string][] {
  const x = opts(o);
  // QEMU's own edk2 build (Homebrew, MacPorts, the Windows installer): the x86_64 code with the
  // i386 vars template, as QEMU's firmware descriptors pair them.
  const edk2 = (dir: string): [string, string] => [join(dir, 'edk2-x86_64-code.fd'), join(dir, 'edk2-i386-vars.fd')];
  if (x.platform === 'darwin') return macPrefixes(x).map((p) => edk2(join(p, 'share', 'qemu')));
  if (x.platform === 'win32') return windowsDirs(x, ['qemu', 'share']).map(edk2);
  return [
    ['/usr/share/OVMF/OVMF_CODE_4M.fd', '/usr/share/OVMF/OVMF_VARS_4M.fd'],
    ['/usr/share/edk2/x64/OVMF_CODE.4m.fd', '/usr/share/edk2/x64/OVMF_VARS.4m.fd'],
    ['/usr/share/OVMF/OVMF_CODE.fd', '/usr/share/OVMF/OVMF_VARS.fd'],
    ['/usr/share/edk2/ovmf/OVMF_CODE.fd', '/usr/share/edk2/ovmf/OVMF_VARS.fd'],
    ['/usr/share/qemu/edk2-x86_64-code.fd', '/usr/share/qemu/edk2-i386-vars.fd'],
  ].map(([c, v]) => [x.root + c, x.root + v] as [string, string]);
}

export function findFirmware(o: FindOptions = {}): { code: string; vars: string } | null {
  for (const [code, vars] of firmwareCandidates(o)) if (existsSync(code) && existsSync(vars)) return { code, vars };
  return null;
}

/** Accelerators worth probing for x86_64 guests on this host, best first. */
export function acceleratorCandidates(platform: NodeJS.Platform, arch: string): ('kvm' | 'hvf' | 'whpx' | 'tcg')[] {
  if (platform === 'linux') return arch === 'x64' ? ['kvm', 'tcg'] : ['tcg'];
  // HVF runs guests of the host's own architecture only: an Apple Silicon Mac emulates x86_64.
  if (platform === 'darwin') return arch === 'x64' ? ['hvf', 'tcg'] : ['tcg'];
  if (platform === 'win32') return arch === 'x64' ? ['whpx', 'tcg'] : ['tcg'];
  return ['tcg'];
}

/** What this kind of host can run, said plainly for the host report; null when nothing needs saying. */
export function platformNote(platform: NodeJS.Platform, arch: string): string | null {
  if (platform === 'darwin' && arch === 'arm64') {
    return (
      'Apple Silicon Mac: x86_64 images (every Skytap template, the test image) run under TCG emulation, which is slow but correct ' +
      '(expect boots several times longer than on an Intel Mac or a Linux laptop with KVM); arm64 images would run at full speed with HVF.'
    );
  }
  if (platform === 'darwin') return 'Intel Mac: x86_64 images run with HVF acceleration.';
  if (platform === 'win32')
    return (
      'Windows: x86_64 images run with WHPX when the Windows Hypervisor Platform feature is on, else under TCG emulation; ' +
      'swtpm (for attested boots) has no official Windows build.'
    );
  if (platform === 'linux' && arch !== 'x64') return `Linux on ${arch}: x86_64 images run under TCG emulation (slow but correct).`;
  return null;
}

export type Needed = 'qemu' | 'qemu-img' | 'swtpm' | 'firmware';

/** How to install a missing piece on this platform. */
export function installHint(what: Needed, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'darwin') return what === 'swtpm' ? 'brew install swtpm' : 'brew install qemu';
  if (platform === 'win32') {
    if (what === 'swtpm')
      return 'swtpm has no official Windows build: install one (MSYS2 or Cygwin) and put it on PATH; attested boots need it';
    return 'winget install SoftwareFreedomConservancy.QEMU';
  }
  return {
    qemu: 'apt-get install qemu-system-x86',
    'qemu-img': 'apt-get install qemu-utils',
    swtpm: 'apt-get install swtpm swtpm-tools',
    firmware: 'apt-get install ovmf',
  }[what];
}
