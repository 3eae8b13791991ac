/**
 * The host report (GET /api/v1/host). The accelerator is probed by really starting a throwaway
 * VM on the firmware we use: a /dev/kvm that opens but fails at the first instruction (as on
 * machines without vmx/svm) is "present but unusable", and TCG is chosen.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, hostname, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { dyingWithParent } from '../lib/procs';
import { sleep } from '../lib/sleep';
import type { Accel } from './argv';
import { acceleratorCandidates, findFirmware, findTool, firmwareCandidates, installHint, platformNote } from './finders';
import { Qmp, openQmpWhenReady } from './qmp';

export interface ToolStatus {
  found: boolean;
  path: string | null;
  version: string | null;
  error: string | null;
}
export interface AccelProbe {
  accel: Accel;
  result: 'usable' | 'unusable' | 'absent' | 'unsupported';
  detail: string;
}
export interface Missing {
  what: string;
  install: string;
}
export interface HostReport {
  hostname: string;
  kernel: string;
  platform: string;
  arch: string;
  /** What this kind of host can run, in plain words (e.g. x86_64 under TCG on Apple Silicon); null when nothing needs saying. */
  platformNote: string | null;
  cpus: number;
  memoryBytes: number;
  qemu: ToolStatus;
  qemuImg: ToolStatus;
  swtpm: ToolStatus;
  tpm2Tools: ToolStatus;
  busybox: ToolStatus;
  ovmfCode: string | null;
  ovmfVars: string | null;
  guestKernel: string | null;
  accelerator: { chosen: Accel | null; reason: string; warning: string | null; probes: AccelProbe[] };
  ready: boolean;
  missing: Missing[];
}

/** This platform's UEFI firmware candidates (main/vm-manager/finders.ts). */
export const OVMF_CANDIDATES: [code: string, vars: string][] = firmwareCandidates();

export function findOvmf(): { code: string; vars: string } | null {
  return findFirmware();
}

/** A program on PATH or where this platform's installers put it (finders.ts). */
export function which(cmd: string): string | null {
  return findTool(cmd);
}

function version(cmd: string, args: string[]): Promise<ToolStatus> {
  const path = which(cmd);
  if (!path) return Promise.resolve({ found: false, path: null, version: null, error: `${cmd} not on PATH` });
  return new Promise((resolve) => {
    execFile(path, args, { timeout: 5000 }, (err, stdout, stderr) => {
      const text =
        `${stdout}${stderr}`
          .split('\n')
          .find((l) => /\d+\.\d+/.test(l))
          ?.trim() ?? null;
      if (err && !text) resolve({ found: true, path, version: null, error: String(err.message).split('\n')[0] ?? 'failed' });
      else resolve({ found: true, path, version: text, error: null });
    });
  });
}

/** Starts a throwaway VM with the given accelerator for a moment and asks QMP whether it runs. */
export async function probeAccel(accel: Accel, qemu: string, ovmf: { code: string; vars: string }, windowMs = 1500): Promise<AccelProbe> {
  const dir = mkdtempSync(join(tmpdir(), 'vmm-probe-'));
  const vars = join(dir, 'vars.fd');
  copyFileSync(ovmf.vars, vars);
  const qmpPath = join(dir, 'qmp.sock');
  const args = [
    '-machine',
    'q35',
    '-accel',
    accel,
    '-m',
    '64',
    '-nodefaults',
    '-display',
    'none',
    '-serial',
    'none',
    '-no-reboot',
    '-drive',
    `if=pflash,format=raw,unit=0,readonly=on,file=${ovmf.code}`,
    '-drive',
    `if=pflash,format=raw,unit=1,file=${vars}`,
    '-qmp',
    `unix:${qmpPath},server=on,wait=off`,
  ];
  // The throwaway VM dies with this process (setpriv, Linux). Elsewhere it is wrapped in `timeout`:
  // if this process dies mid-probe, it dies within 20 s instead of running on as an orphan
  // (SIGTERM to `timeout` is passed on to QEMU).
  let [file, argv] = dyingWithParent(qemu, args);
  const wrap = file === qemu ? which('timeout') : null;
  if (wrap) [file, argv] = [wrap, ['-s', 'KILL', '20', qemu, ...args]];
  const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  let exited: number | null | undefined;
  const exit = new Promise<void>((r) =>
    child.on('exit', (code) => {
      exited = code;
      r();
    }),
  );
  child.on('error', (e) => (stderr += e.message));
  let qmp: Qmp | null = null;
  try {
    qmp = await openQmpWhenReady(qmpPath, 5000, () => exited === undefined);
    await sleep(windowMs);
    const status = (await qmp.run('query-status')) as { status?: string; running?: boolean };
    const errLine = stderr
      .split('\n')
      .find((l) => /error|fail/i.test(l))
      ?.trim();
    if (status.status === 'running' && exited === undefined)
      return { accel, result: 'usable', detail: `a ${accel} guest ran OVMF for ${windowMs} ms` };
    return {
      accel,
      result: 'unusable',
      detail: `present but unusable: the guest stopped (${status.status})${errLine ? `: ${errLine}` : ''}`,
    };
  } catch (e) {
    const line =
      stderr
        .split('\n')
        .filter((l) => l.trim() && !/warning/i.test(l))[0]
        ?.trim() ?? (e instanceof Error ? e.message : String(e));
    return { accel, result: 'unusable', detail: `present but unusable: ${line}` };
  } finally {
    qmp?.close();
    if (exited === undefined) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exit;
    clearTimeout(killer);
    rmSync(dir, { recursive: true, force: true });
  }
}

function candidates(): Accel[] {
  return acceleratorCandidates(process.platform, process.arch);
}

let accelCache: Promise<HostReport['accelerator']> | null = null;

/** Probes once per process (a probe costs a VM start); `force` re-probes. */
export function chooseAccelerator(
  qemu: string | null,
  ovmf: { code: string; vars: string } | null,
  force = false,
): Promise<HostReport['accelerator']> {
  if (accelCache && !force) return accelCache;
  accelCache = (async () => {
    if (!qemu || !ovmf) return { chosen: null, reason: 'cannot probe: qemu-system-x86_64 or OVMF is missing', warning: null, probes: [] };
    const probes: AccelProbe[] = [];
    for (const accel of candidates()) {
      if (accel === 'kvm' && !existsSync('/dev/kvm')) {
        probes.push({ accel, result: 'absent', detail: '/dev/kvm does not exist' });
        continue;
      }
      const p = await probeAccel(accel, qemu, ovmf);
      probes.push(p);
      if (p.result === 'usable') {
        const hw = probes.filter((x) => x.accel !== 'tcg');
        const notUsed = hw.map((x) => `${x.accel} is ${x.result === 'absent' ? 'absent' : x.detail}`).join('; ');
        const warning =
          accel === 'tcg'
            ? `no hardware acceleration (${hw.map((x) => `${x.accel}: ${x.detail}`).join('; ') || 'none for this platform'}): ` +
              'VMs run under TCG emulation, several times slower'
            : null;
        const reason =
          accel === 'tcg' ? `tcg chosen because ${notUsed || 'no hardware accelerator exists here'}` : `${accel} chosen: ${p.detail}`;
        return { chosen: accel, reason, warning, probes };
      }
    }
    return {
      chosen: null,
      reason: `no accelerator works: ${probes.map((x) => `${x.accel}: ${x.detail}`).join('; ')}`,
      warning: null,
      probes,
    };
  })();
  return accelCache;
}

export async function hostReport(opts: { forceProbe?: boolean } = {}): Promise<HostReport> {
  const [qemu, qemuImg, swtpm, tpm2Tools, busybox] = await Promise.all([
    version('qemu-system-x86_64', ['--version']),
    version('qemu-img', ['--version']),
    version('swtpm', ['--version']),
    version('tpm2_quote', ['--version']),
    version('busybox', ['--help']),
  ]);
  const ovmf = findOvmf();
  let guestKernel: string | null;
  try {
    const { findKernel } = await import('./test-image');
    guestKernel = findKernel().kernel;
  } catch {
    guestKernel = null;
  }
  const accelerator = await chooseAccelerator(qemu.path, ovmf, opts.forceProbe);
  const missing: Missing[] = [];
  if (!qemu.found) missing.push({ what: 'qemu-system-x86_64', install: installHint('qemu') });
  if (!qemuImg.found) missing.push({ what: 'qemu-img', install: installHint('qemu-img') });
  if (!swtpm.found) missing.push({ what: 'swtpm', install: installHint('swtpm') });
  if (!ovmf) missing.push({ what: "UEFI firmware (OVMF_CODE_4M.fd, or QEMU's edk2-x86_64-code.fd)", install: installHint('firmware') });
  // The test image is built from the host's own Debian packages, so only a Linux host can build it.
  if (process.platform === 'linux') {
    if (!tpm2Tools.found) missing.push({ what: 'tpm2-tools (for the test image)', install: 'apt-get install tpm2-tools' });
    if (!busybox.found || !existsSync('/bin/busybox'))
      missing.push({ what: 'busybox-static (for the test image)', install: 'apt-get install busybox-static' });
    if (!existsSync('/usr/sbin/dropbear'))
      missing.push({ what: "dropbear (the test image's SSH server)", install: 'apt-get install dropbear-bin' });
    if (!guestKernel)
      missing.push({
        what: 'guest kernel /boot/vmlinuz-*-cloud-amd64 (for the test image)',
        install: 'apt-get install linux-image-cloud-amd64',
      });
  }
  // VM networks (net-switch.ts): a vde_switch per network, the gateway port through vde_plug.
  if (!findTool('vde_switch') || !findTool('vde_plug'))
    missing.push({
      what: "vde_switch and vde_plug (the VMs' networks)",
      install: process.platform === 'darwin' ? 'brew install vde' : 'apt-get install vde2',
    });
  if (qemu.found && ovmf && !accelerator.chosen)
    missing.push({ what: `a working accelerator (${accelerator.reason})`, install: installHint('qemu') });
  let kernel: string;
  try {
    kernel = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  } catch {
    kernel = process.platform;
  }
  return {
    hostname: hostname(),
    kernel,
    platform: process.platform,
    arch: process.arch,
    platformNote: platformNote(process.platform, process.arch),
    cpus: cpus().length,
    memoryBytes: totalmem(),
    qemu,
    qemuImg,
    swtpm,
    tpm2Tools,
    busybox,
    ovmfCode: ovmf?.code ?? null,
    ovmfVars: ovmf?.vars ?? null,
    guestKernel,
    accelerator,
    ready: missing.length === 0 && accelerator.chosen !== null,
    missing,
  };
}
