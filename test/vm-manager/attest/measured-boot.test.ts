/**
 * Which PCRs carry the kernel command line and the initrd with this firmware: boots the Debian
 * cloud kernel under QEMU (TCG) + OVMF + swtpm three times — as is, with another command line, with
 * an initrd of the same size but other contents — and reads the sha256 PCRs in the guest from
 * /sys/class/tpm/tpm0/pcr-sha256. docs/attestation-references.md's PCR table rests on this.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../../support/system';
import { cleanup, tempDir } from './harness';

const OVMF_CODE = '/usr/share/OVMF/OVMF_CODE_4M.fd';
const OVMF_VARS = '/usr/share/OVMF/OVMF_VARS_4M.fd';
const kernel = existsSync('/boot') ? readdirSync('/boot').find((f) => /^vmlinuz-.*-cloud-amd64$/.test(f)) : undefined;
const KERNEL = kernel ? join('/boot', kernel) : '/boot/vmlinuz-*-cloud-amd64';
const skip = needs(['qemu-system-x86_64', 'swtpm', 'busybox', OVMF_CODE, OVMF_VARS, KERNEL]);

/** newc cpio archive (uncompressed) from [path, mode, data] entries; directories have data null. */
function cpio(entries: [string, number, Buffer | null][]): Buffer {
  const parts: Buffer[] = [];
  let ino = 1;
  const add = (name: string, mode: number, data: Buffer) => {
    const hex = (n: number) => n.toString(16).padStart(8, '0');
    const nameZ = Buffer.from(name + '\0');
    const header =
      '070701' +
      hex(ino++) +
      hex(mode) +
      hex(0) +
      hex(0) +
      hex(1) +
      hex(0) +
      hex(data.length) +
      hex(0) +
      hex(0) +
      hex(0) +
      hex(0) +
      hex(nameZ.length) +
      hex(0);
    parts.push(Buffer.from(header), nameZ, Buffer.alloc((4 - ((110 + nameZ.length) % 4)) % 4));
    parts.push(data, Buffer.alloc((4 - (data.length % 4)) % 4));
  };
  for (const [name, mode, data] of entries) add(name, data === null ? 0o040755 : 0o100000 | mode, data ?? Buffer.alloc(0));
  add('TRAILER!!!', 0, Buffer.alloc(0));
  return Buffer.concat(parts);
}

const INIT = `#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
for i in 0 1 2 3 4 5 6 7 8 9 11 12 13 14; do
  echo "PCR $i $(/bin/busybox cat /sys/class/tpm/tpm0/pcr-sha256/$i 2>&1)"
done
echo "PCRS-DONE"
/bin/busybox poweroff -f
`;

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe.skipIf(skip)('measured boot under OVMF -kernel (QEMU TCG + swtpm)', () => {
  let root: string;
  let busybox: Buffer;

  beforeAll(async () => {
    root = tempDir('measured');
    const { execFileSync } = await import('node:child_process');
    busybox = readFileSync(execFileSync('sh', ['-c', 'command -v busybox']).toString().trim());
  });
  afterAll(() => {
    if (root) cleanup(root);
  });

  function initrd(name: string, marker: string): string {
    const file = join(root, name);
    writeFileSync(
      file,
      cpio([
        ['bin', 0, null],
        ['proc', 0, null],
        ['sys', 0, null],
        ['dev', 0, null],
        ['bin/busybox', 0o755, busybox],
        ['init', 0o755, Buffer.from(INIT)],
        ['marker', 0o644, Buffer.from(marker)],
      ]),
    );
    return file;
  }

  /** Boots once with a fresh swtpm and vars copy; returns the guest's sha256 PCRs. */
  async function boot(name: string, initrdFile: string, cmdline: string): Promise<Record<string, string>> {
    const dir = join(root, name);
    mkdirSync(dir);
    copyFileSync(OVMF_VARS, join(dir, 'vars.fd'));
    const sock = join(dir, 'swtpm.sock');
    const swtpm = spawn('swtpm', ['socket', '--tpm2', '--tpmstate', `dir=${dir}`, '--ctrl', `type=unixio,path=${sock}`], {
      stdio: 'ignore',
    });
    try {
      for (let i = 0; i < 100 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
      const console = join(dir, 'console.log');
      const q = await run(
        'qemu-system-x86_64',
        [
          '-machine',
          'q35',
          '-accel',
          'tcg',
          '-m',
          '512',
          '-nodefaults',
          '-display',
          'none',
          '-no-reboot',
          '-serial',
          `file:${console}`,
          '-drive',
          `if=pflash,format=raw,unit=0,readonly=on,file=${OVMF_CODE}`,
          '-drive',
          `if=pflash,format=raw,unit=1,file=${join(dir, 'vars.fd')}`,
          '-chardev',
          `socket,id=chrtpm,path=${sock}`,
          '-tpmdev',
          'emulator,id=tpm0,chardev=chrtpm',
          '-device',
          'tpm-crb,tpmdev=tpm0',
          '-kernel',
          KERNEL,
          '-initrd',
          initrdFile,
          '-append',
          cmdline,
        ],
        90_000,
      );
      const out = existsSync(console) ? readFileSync(console, 'latin1') : '';
      if (!out.includes('PCRS-DONE')) {
        throw new Error(`guest ${name} did not print its PCRs (qemu exit ${q.code}): ${q.stderr.slice(-400)} console: ${out.slice(-600)}`);
      }
      const pcrs: Record<string, string> = {};
      for (const m of out.matchAll(/^PCR (\d+) ([0-9A-Fa-f]{64})\r?$/gm)) pcrs[m[1]!] = m[2]!.toLowerCase();
      return pcrs;
    } finally {
      swtpm.kill('SIGTERM');
    }
  }

  it('the command line and the initrd contents change PCR 9 only; firmware PCRs 0-7 stay put', async () => {
    const base = initrd('base.cpio', 'AAAA');
    const other = initrd('other.cpio', 'BBBB'); // same size, other contents
    const cmd = 'console=ttyS0 quiet';
    const a = await boot('base', base, cmd);
    const b = await boot('cmdline', base, `${cmd} povdesk.test=1`);
    const c = await boot('initrd', other, cmd);

    expect(Object.keys(a)).toHaveLength(14);
    expect(a['9']).not.toBe('0'.repeat(64));
    for (const p of ['0', '1', '2', '3', '4', '5', '6', '7', '11', '13']) {
      expect(b[p], `pcr ${p} with another command line`).toBe(a[p]);
      expect(c[p], `pcr ${p} with another initrd`).toBe(a[p]);
    }
    expect(b['9']).not.toBe(a['9']);
    expect(c['9']).not.toBe(a['9']);
    expect(c['9']).not.toBe(b['9']);
    // Nothing measures PCR 11 or 13 before guest-quote.sh does.
    expect(a['11']).toBe('0'.repeat(64));
    expect(a['13']).toBe('0'.repeat(64));
  }, 240_000);
});
