/**
 * Finding QEMU, swtpm and UEFI firmware where each platform's installers put them, against fake
 * directory trees laid out like a Homebrew Mac (Apple Silicon and Intel), a Windows QEMU install and
 * the Linux distributions. An app started from the Finder or the Start menu has a bare PATH, so the
 * installers' folders must be searched too.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acceleratorCandidates, findFirmware, findTool, installHint, platformNote } from '../../main/vm-manager/finders';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A fake filesystem root holding the given files (paths relative to the root). */
function tree(files: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'finders-'));
  roots.push(root);
  for (const f of files) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), '');
  }
  return root;
}

/** What launchd gives an app started from the Finder, inside the fake root. */
const guiPath = (root: string) => ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((p) => root + p).join(':');

describe('macOS (Homebrew, MacPorts)', () => {
  it('finds QEMU, swtpm and the edk2 firmware under /opt/homebrew on Apple Silicon with the Finder’s PATH', () => {
    const root = tree([
      'opt/homebrew/bin/qemu-system-x86_64',
      'opt/homebrew/bin/qemu-img',
      'opt/homebrew/bin/swtpm',
      'opt/homebrew/share/qemu/edk2-x86_64-code.fd',
      'opt/homebrew/share/qemu/edk2-i386-vars.fd',
    ]);
    const o = { platform: 'darwin' as const, arch: 'arm64', env: { PATH: guiPath(root) }, root };
    expect(findTool('qemu-system-x86_64', o)).toBe(join(root, 'opt/homebrew/bin/qemu-system-x86_64'));
    expect(findTool('swtpm', o)).toBe(join(root, 'opt/homebrew/bin/swtpm'));
    expect(findFirmware(o)).toEqual({
      code: join(root, 'opt/homebrew/share/qemu/edk2-x86_64-code.fd'),
      vars: join(root, 'opt/homebrew/share/qemu/edk2-i386-vars.fd'),
    });
  });

  it('finds an Intel Mac’s /usr/local, a custom $HOMEBREW_PREFIX, and MacPorts', () => {
    const intel = tree([
      'usr/local/bin/qemu-system-x86_64',
      'usr/local/share/qemu/edk2-x86_64-code.fd',
      'usr/local/share/qemu/edk2-i386-vars.fd',
    ]);
    expect(findTool('qemu-system-x86_64', { platform: 'darwin', env: { PATH: guiPath(intel) }, root: intel })).toBe(
      join(intel, 'usr/local/bin/qemu-system-x86_64'),
    );
    expect(findFirmware({ platform: 'darwin', env: {}, root: intel })?.code).toBe(join(intel, 'usr/local/share/qemu/edk2-x86_64-code.fd'));
    const custom = tree(['brew/bin/swtpm']);
    expect(
      findTool('swtpm', {
        platform: 'darwin',
        env: { PATH: guiPath(custom), HOMEBREW_PREFIX: join(custom, 'brew') },
        root: '/nonexistent',
      }),
    ).toBe(join(custom, 'brew/bin/swtpm'));
    const ports = tree(['opt/local/bin/qemu-img']);
    expect(findTool('qemu-img', { platform: 'darwin', env: { PATH: guiPath(ports) }, root: ports })).toBe(
      join(ports, 'opt/local/bin/qemu-img'),
    );
  });

  it('prefers PATH, ignores a directory named like the tool, and needs both firmware halves', () => {
    const root = tree(['mine/qemu-img', 'opt/homebrew/bin/qemu-img', 'opt/homebrew/share/qemu/edk2-x86_64-code.fd']);
    mkdirSync(join(root, 'opt/homebrew/bin/swtpm'));
    const o = { platform: 'darwin' as const, env: { PATH: `${join(root, 'mine')}:${guiPath(root)}` }, root };
    expect(findTool('qemu-img', o)).toBe(join(root, 'mine/qemu-img'));
    expect(findTool('swtpm', o)).toBeNull();
    expect(findFirmware(o)).toBeNull();
  });
});

describe('Windows (the QEMU installer)', () => {
  it('finds qemu-system-x86_64.exe and the firmware under %ProgramFiles%\\qemu, and tools on a ;-separated PATH', () => {
    const root = tree([
      'Program Files/qemu/qemu-system-x86_64.exe',
      'Program Files/qemu/qemu-img.exe',
      'Program Files/qemu/share/edk2-x86_64-code.fd',
      'Program Files/qemu/share/edk2-i386-vars.fd',
      'tools/swtpm.exe',
    ]);
    const o = {
      platform: 'win32' as const,
      env: {
        ProgramFiles: join(root, 'Program Files'),
        PATH: `${join(root, 'nothing')};${join(root, 'tools')}`,
        PATHEXT: '.COM;.EXE;.BAT',
      },
      root,
    };
    expect(findTool('qemu-system-x86_64', o)).toBe(join(root, 'Program Files/qemu/qemu-system-x86_64.exe'));
    expect(findTool('swtpm', o)).toBe(join(root, 'tools/swtpm.exe'));
    expect(findFirmware(o)).toEqual({
      code: join(root, 'Program Files/qemu/share/edk2-x86_64-code.fd'),
      vars: join(root, 'Program Files/qemu/share/edk2-i386-vars.fd'),
    });
    expect(findTool('qemu-system-x86_64', { ...o, env: { PATH: '' } })).toBeNull();
  });
});

describe('Linux', () => {
  it('prefers Debian’s 4M OVMF pair, then other distributions’ layouts', () => {
    const both = tree([
      'usr/share/OVMF/OVMF_CODE_4M.fd',
      'usr/share/OVMF/OVMF_VARS_4M.fd',
      'usr/share/OVMF/OVMF_CODE.fd',
      'usr/share/OVMF/OVMF_VARS.fd',
    ]);
    expect(findFirmware({ platform: 'linux', root: both })?.code).toBe(join(both, 'usr/share/OVMF/OVMF_CODE_4M.fd'));
    const arch = tree(['usr/share/edk2/x64/OVMF_CODE.4m.fd', 'usr/share/edk2/x64/OVMF_VARS.4m.fd']);
    expect(findFirmware({ platform: 'linux', root: arch })?.vars).toBe(join(arch, 'usr/share/edk2/x64/OVMF_VARS.4m.fd'));
    expect(findFirmware({ platform: 'linux', root: tree(['usr/share/OVMF/OVMF_CODE_4M.fd']) })).toBeNull();
  });

  it('finds a tool in /usr/sbin when PATH lacks it', () => {
    const root = tree(['usr/sbin/swtpm']);
    expect(findTool('swtpm', { platform: 'linux', env: { PATH: '/nonexistent' }, root })).toBe(join(root, 'usr/sbin/swtpm'));
  });
});

describe('what each host can run, said plainly', () => {
  it('an Apple Silicon Mac runs x86_64 under TCG only (slow but correct) and arm64 with HVF', () => {
    expect(acceleratorCandidates('darwin', 'arm64')).toEqual(['tcg']);
    expect(platformNote('darwin', 'arm64')).toMatch(
      /x86_64 images .* run under TCG emulation, which is slow but correct.*arm64 images would run at full speed with HVF/,
    );
    expect(acceleratorCandidates('darwin', 'x64')).toEqual(['hvf', 'tcg']);
    expect(acceleratorCandidates('win32', 'x64')).toEqual(['whpx', 'tcg']);
    expect(acceleratorCandidates('linux', 'x64')).toEqual(['kvm', 'tcg']);
    expect(acceleratorCandidates('linux', 'arm64')).toEqual(['tcg']);
    expect(platformNote('linux', 'x64')).toBeNull();
  });

  it('tells each platform how to install what is missing', () => {
    expect(installHint('qemu', 'darwin')).toBe('brew install qemu');
    expect(installHint('swtpm', 'darwin')).toBe('brew install swtpm');
    expect(installHint('qemu', 'win32')).toMatch(/winget install/);
    expect(installHint('firmware', 'linux')).toBe('apt-get install ovmf');
  });
});
