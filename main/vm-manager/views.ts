/**
 * What the REST API answers: the daemon's records in giantswarm's shapes (main/vm-api/schemas.ts,
 * from api/openapi.yaml @ dc39fe35). Fields the document requires are always there; where a field
 * has no meaning on a laptop its value says so (cid 0: no vsock), and optional fields without a
 * value are absent, never null. What only this daemon knows (ports, the guest's SSH host key, the
 * PCR table, the accelerator, ...) travels beside the documented fields under `povdesk`, which a
 * client speaking only the document ignores. docs/vm-manager-api.md lists every such field.
 */
import { readFileSync } from 'node:fs';
import type { Attestation, Host, Image, Metrics, Network } from '../vm-api/schemas';
import { firmwareChange } from './golden';
import { goldenForSize, learnedSizes } from './attest/index';
import { referencesSummary } from './image-references';
import { findOvmf, type HostReport } from './host';
import { getImage, listImages } from './images';
import type { NetworkEntry } from './networks';
import type { StageResult, VmRecord } from './vm-record';

/** vsock context id of every VM here: 0 is VMADDR_CID_HYPERVISOR, never a guest's, i.e. no vsock. */
export const NO_VSOCK_CID = 0;
/** Images here have one version each. */
export const IMAGE_VERSION = 'unversioned';

const opt = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);
/** drops keys whose value is undefined, so JSON and deep comparison agree */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const quote = (s: StageResult | null) => (s ? compact({ verified: s.verified, message: s.message, at: s.at }) : undefined);

export function attestationDoc(r: VmRecord): Attestation {
  return compact({
    required: r.attestation.required,
    userDataReleased: r.attestation.userDataReleased,
    nonceIssuedAt: opt(r.attestation.nonceIssuedAt),
    initrd: quote(r.attestation.initrd),
    ready: quote(r.attestation.ready),
  });
}

/** The attestation with this daemon's PCR table (golden values compared), under `povdesk`. */
export function attestationView(stateDir: string, r: VmRecord) {
  let golden: Record<string, string> = {};
  let compared: number[] = [];
  let recordOnly: number[] = [];
  let references = false;
  try {
    const p = getImage(stateDir, r.image).policy;
    if (p) {
      references = !!p.references;
      golden = references ? {} : goldenForSize(p, { cpus: r.cpus, memoryMiB: r.memoryMiB }).sha256;
      recordOnly = references ? [] : (p.record_only ?? []);
      compared = [...new Set([...p.pcrs.initrd, ...p.pcrs.ready])].filter((n) => n !== 11 && n !== 13 && !recordOnly.includes(n));
    }
  } catch {
    // image gone: no golden values to show
  }
  const latest = r.attestation.ready ?? r.attestation.initrd;
  const pcrs = latest?.pcrs ?? {};
  // With references a PCR is compared with the replay of the event log (a mismatch holds the replayed value).
  const replayed = (pcr: string) =>
    latest?.mismatches.find((m) => m.pcr === pcr)?.expected ?? (latest?.events ? (pcrs[pcr] ?? null) : null);
  const table = Object.keys(pcrs)
    .sort((a, b) => Number(a) - Number(b))
    .map((pcr) => {
      const expected = references ? (compared.includes(Number(pcr)) ? replayed(pcr) : null) : (golden[pcr] ?? null);
      return {
        pcr,
        value: pcrs[pcr] ?? '',
        golden: references ? null : expected,
        ...(references ? { replayed: expected } : {}),
        compared: compared.includes(Number(pcr)),
        match: expected === null ? null : expected === pcrs[pcr],
      };
    });
  return {
    id: r.id,
    image: r.image,
    cpus: r.cpus,
    memoryMiB: r.memoryMiB,
    state: r.state,
    stage: r.attestation.ready ? 'ready' : r.attestation.initrd ? 'initrd' : null,
    references,
    ...r.attestation,
    table,
  };
}

const LIVE_STATES = ['booting', 'attesting', 'ready', 'running'];

export function vmView(r: VmRecord) {
  const live = LIVE_STATES.includes(r.state);
  return compact({
    id: r.id,
    name: r.name,
    image: r.image,
    cpus: r.cpus,
    memoryMiB: r.memoryMiB,
    diskGiB: r.diskGiB,
    network: r.network,
    sshAuthorizedKeys: r.sshAuthorizedKeys.length ? r.sshAuthorizedKeys : undefined,
    hostname: r.hostname ?? r.name,
    metadata: Object.keys(r.metadata).length ? r.metadata : undefined,
    requireAttestation: r.requireAttestation,
    state: r.state,
    phase: r.startedAt ? ('boot' as const) : undefined,
    // The VM's lease on its network (eth1); ip only while it runs, as giantswarm's.
    ip: live && r.lease ? r.lease.ip : undefined,
    mac: opt(r.lease?.mac),
    cid: NO_VSOCK_CID,
    machineID: r.machineID,
    booted: r.booted,
    sshPublicKey: r.sshKey?.publicKey ?? 'none yet: the manager makes its key for this VM when the VM first starts',
    attestation: attestationDoc(r),
    createdAt: r.createdAt,
    installedAt: opt(r.installedAt),
    bootedAt: opt(r.bootedAt),
    readyAt: opt(r.readyAt),
    lastError: opt(r.lastError),
    paths: compact({
      dir: r.paths.dir,
      volume: opt(r.paths.disk),
      console: r.paths.console,
      tpmState: r.paths.tpmState,
      ovmfVars: r.paths.ovmfVars,
      qmpSocket: r.paths.qmpSocket,
      sshKey: r.sshKey ? r.paths.sshKey : undefined,
      userData: r.hasUserData ? r.paths.userData : undefined,
    }),
    povdesk: {
      accel: r.accel,
      startedAt: r.startedAt,
      stoppedAt: r.stoppedAt,
      durations: r.durations,
      ports: r.ports,
      forwards: r.forwards,
      hostForwards: r.hostForwards,
      pids: r.pids,
      sshHostKey: r.sshHostKey,
      serialSocket: r.paths.serialSocket,
      hasUserData: r.hasUserData,
      cleanAt: r.cleanAt,
      cleanMemory: r.cleanMemory,
      cleanNote: r.cleanNote,
      lastReset: r.lastReset,
      attestation: {
        akFingerprint: r.attestation.akFingerprint,
        initrd: r.attestation.initrd,
        ready: r.attestation.ready,
        ...(r.attestation.learn ? { learn: true } : {}),
      },
    },
  });
}
export type VmView = ReturnType<typeof vmView>;

export function hostView(h: HostReport): Host & { povdesk: HostReport } {
  const kvm = h.accelerator.probes.find((p) => p.accel === 'kvm');
  return compact({
    hostname: h.hostname,
    kernel: h.kernel,
    cpus: h.cpus,
    memoryBytes: h.memoryBytes,
    kvm: compact({
      path: '/dev/kvm',
      accessible: kvm?.result === 'usable',
      error: kvm && kvm.result !== 'usable' ? kvm.detail : kvm ? undefined : `not probed on ${h.platform}: ${h.accelerator.reason}`,
    }),
    vhostVsock: {
      path: '/dev/vhost-vsock',
      accessible: false,
      error: 'not used: guests here reach the manager over QEMU user-mode networking (metadata service at 169.254.169.254), not vsock',
    },
    qemu: compact({ found: h.qemu.found, version: opt(h.qemu.version), error: opt(h.qemu.error) }),
    swtpm: compact({ found: h.swtpm.found, version: opt(h.swtpm.version), error: opt(h.swtpm.error) }),
    systemd: {
      found: false,
      error: 'not used: VMs here are detached QEMU + swtpm processes supervised by vm-manager itself, not systemd units',
    },
    ovmfCode: opt(h.ovmfCode),
    storageProviders: [],
    ready: h.ready,
    missing: h.ready
      ? undefined
      : h.missing.map((m) => `${m.what} (${m.install})`).concat(h.accelerator.chosen ? [] : [`an accelerator: ${h.accelerator.reason}`]),
    povdesk: h,
  });
}

type StoredImage = ReturnType<typeof listImages>[number];

/** The daemon's own image view (name, kind, sizes, reference measurements or golden values), kept under `povdesk`. */
export function localImageView(i: StoredImage) {
  const { dir, policy, ...rest } = i;
  return {
    ...rest,
    path: dir,
    policy: policy
      ? {
          pcrs: policy.pcrs,
          recordOnly: policy.record_only ?? [],
          golden: policy.golden.sha256,
          goldenCount: Object.keys(policy.golden.sha256).length,
          // what the boot will measure, made from the files (any VM size); else why not (golden values are the fallback)
          references: policy.references ? referencesSummary(policy.references) : null,
          unpredictable: policy.unpredictable ?? null,
          // sizes other than the default one that a learn boot ran at (shared/golden-size.ts)
          goldenSizes: learnedSizes(policy),
          firmware: policy.golden_firmware ?? null,
          firmwareChanged: firmwareChange(policy, findOvmf()?.code ?? null),
        }
      : null,
  };
}

export function imageView(i: StoredImage): Image & { povdesk: ReturnType<typeof localImageView> } {
  const kernel = i.kind === 'kernel';
  return compact({
    id: i.name,
    version: IMAGE_VERSION,
    uki: kernel
      ? `none: boots ${i.dir}/${i.kernel ?? '?'} with ${i.initrd ?? '?'} directly (no UKI, no installer phase)`
      : 'none: a disk image booted from its own overlay (no UKI, no installer phase)',
    disk: !kernel && i.disk ? `${i.dir}/${i.disk}` : 'none: a kernel image, booted without a disk',
    policy: (i.policy ?? undefined) as Record<string, unknown> | undefined,
    povdesk: localImageView(i),
  });
}

/** "<id>_<version>" or the bare id. */
export function imageByRef(stateDir: string, ref: string) {
  const suffix = `_${IMAGE_VERSION}`;
  return getImage(stateDir, ref.endsWith(suffix) ? ref.slice(0, -suffix.length) : ref);
}

export function networkView(
  n: NetworkEntry,
  vms: VmRecord[],
): Network & { povdesk: { mode: string; builtin: boolean; internet: boolean } } {
  const on = vms.filter((v) => v.network === n.name && v.state !== 'deleting' && v.lease);
  return {
    spec: compact({
      name: n.name,
      cidr: n.cidr,
      gatewayIP: n.gatewayIP,
      dnsSearchDomain: opt(n.dnsSearchDomain),
      enableIMDS: true,
      enableHostAlias: n.mode === 'nat',
    }),
    gateway: n.gatewayIP,
    leases: on.map((v) => ({ vmID: v.id, mac: v.lease!.mac, ip: v.lease!.ip })),
    povdesk: { mode: n.mode, builtin: n.builtin, internet: n.internet },
  };
}

/** CPU seconds and resident bytes of a process from /proc (Linux); null elsewhere or when it is gone. */
function procUsage(pid: number): { cpu: number; rss: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]);
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpu: Math.round((ticks / 100) * 100) / 100, rss: rss ? Number(rss[1]) * 1024 : 0 };
  } catch {
    return null;
  }
}

export function metricsView(r: VmRecord, vms: VmRecord[]): Metrics {
  const att = !r.requireAttestation
    ? 'disabled'
    : r.attestation.userDataReleased
      ? 'released'
      : r.attestation.initrd && !r.attestation.initrd.verified
        ? 'failed'
        : 'pending';
  const pid = r.pids.qemu ?? undefined;
  const use = pid ? procUsage(pid) : null;
  return {
    id: r.id,
    host: compact({
      state: r.state,
      attestation: att,
      pid,
      cpu_seconds: use?.cpu,
      memory_rss_bytes: use?.rss,
      disk_bytes: r.diskGiB * 1024 ** 3,
      boot_to_ready_seconds: opt(r.durations.readySeconds),
      // No per-network counters: each VM's user-mode network lives inside its QEMU (docs/vm-manager-api.md).
      network: {
        name: r.network,
        bytes_sent: 0,
        bytes_received: 0,
        leases: vms.filter((v) => v.network === r.network && v.state !== 'deleting').length,
      },
    }),
    guest: null,
    note: 'no systemd-report upload: the guest here reports READY to the metadata service, not a systemd-report',
  };
}
