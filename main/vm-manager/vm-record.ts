/**
 * VM records: the shape persisted as <state>/vms/<id>/vm.json (user-data in its own file), a new
 * VM's record, the in-memory store with its change events, and the upgrade of records written by
 * older managers.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { VmmError } from './errors';
import { writeJsonAtomic } from './images';
import type { Accel } from './argv';
import type { Lease } from './networks';
import type { SshHostKey } from './ssh-host-key';
import type { QuoteVerdict } from './attest/verify';

/** The wire's states (shared/vm-states.ts) and wait_for values: one vocabulary for daemon and client. */
import type { LastReset } from '../vm-api/povdesk';
import type { ApiVmState as VmState, WaitFor } from '../vm-api/schemas';
export type { VmState, WaitFor };
export const LIVE: VmState[] = ['booting', 'attesting', 'ready', 'running'];

export interface StageResult {
  verified: boolean;
  message: string;
  at: string;
  failed: string | null;
  pcrs: Record<string, string>;
  mismatches: { pcr: string; expected: string; got: string }[];
  learned: Record<string, string>;
  /** the event-log check against the image's references (absent: golden values, or a record from before) */
  events?: QuoteVerdict['events'];
}

/** A guest TCP port exposed on the host's 127.0.0.1 (POST /vms/{id}/forward); lives until the VM is deleted. */
export interface PortForward {
  port: number;
  hostPort: number;
}

/** A guest→host forward: the guest's GUEST_HOST_ALIAS:guestPort is the host's 127.0.0.1:hostPort. */
export interface HostForward {
  guestPort: number;
  hostPort: number;
}

export interface VmRecord {
  id: string;
  name: string;
  image: string;
  cpus: number;
  memoryMiB: number;
  diskGiB: number;
  requireAttestation: boolean;
  waitFor: WaitFor;
  /** the network's name (networks.ts): `default` (restricted), `nat`, or one made with POST /networks */
  network: string;
  /**
   * the VM's MAC and address on its network, fixed at create (null: a record from before networks
   * were real, given one at its next start)
   */
  lease: Lease | null;
  accel: Accel;
  state: VmState;
  /** 32 hex characters, made at create (the VM's identity; the document's machineID) */
  machineID: string;
  hostname: string | null;
  metadata: Record<string, string>;
  /** root's authorized keys from the create request (after the manager's own key) */
  sshAuthorizedKeys: string[];
  createdAt: string;
  /** the disk overlay was made (there is no installer boot here) */
  installedAt: string | null;
  startedAt: string | null;
  /** first guest contact with the metadata service in this boot */
  bootedAt: string | null;
  readyAt: string | null;
  stoppedAt: string | null;
  /** whether a boot ever reached READY */
  booted: boolean;
  /** seconds: create→QEMU running (install), QEMU start→first guest contact (boot), QEMU start→READY (ready) */
  durations: { installSeconds: number | null; bootSeconds: number | null; readySeconds: number | null };
  lastError: string | null;
  hasUserData: boolean;
  attestation: {
    required: boolean;
    /** learn mode for this VM only (a "Learn golden values" boot) */
    learn?: boolean;
    userDataReleased: boolean;
    nonceIssuedAt: string | null;
    /** the AK the manager made in this VM's swtpm before its first boot (attest/provision.ts): fingerprint and base64 TPM2B_PUBLIC */
    akFingerprint: string | null;
    akPub: string | null;
    initrd: StageResult | null;
    ready: StageResult | null;
  };
  /** the guest's SSH host key, made by the manager and served to the guest only after attestation (ssh-host-key.ts) */
  sshHostKey: SshHostKey | null;
  /** when "Save clean state" last saved this VM (snapshots.ts), or null */
  cleanAt: string | null;
  /** whether that clean state holds the memory (a reset resumes it) and, when not, why (clean-state.ts) */
  cleanMemory: boolean;
  cleanNote: string | null;
  /** the last "Reset to clean state": resumed from the saved memory, or not and why (a start boots the disks) */
  lastReset: LastReset | null;
  /** the manager's own key for root in the guest (exec); its private half is paths.sshKey */
  sshKey: { publicKey: string } | null;
  pids: { qemu: number | null; swtpm: number | null };
  /** Host ports (127.0.0.1) forwarded into the guest while QEMU runs; ssh → the guest's port 22. */
  ports: { ssh: number | null };
  forwards: PortForward[];
  /**
   * Guest→host forwards (the create body's povdesk.host_forwards): GUEST_HOST_ALIAS:guestPort in
   * the guest reaches 127.0.0.1:hostPort here.
   */
  hostForwards: HostForward[];
  /** serialSocket: null for a VM last started by a vm-manager without the serial socket. */
  paths: {
    dir: string;
    console: string;
    serialSocket: string | null;
    tpmState: string;
    swtpmSocket: string;
    ovmfVars: string;
    qmpSocket: string;
    userData: string;
    disk: string | null;
    sshKey: string;
  };
}

export interface CreateInput {
  name: string;
  image: string;
  cpus: number;
  memoryMiB: number;
  diskGiB: number;
  userData: string | null;
  requireAttestation: boolean;
  waitFor: WaitFor;
  network?: string;
  hostname?: string | null;
  metadata?: Record<string, string>;
  sshAuthorizedKeys?: string[];
  hostForwards?: HostForward[];
  /** a learn boot (golden.ts): PCRs without a golden value are accepted for this VM only */
  learnGolden?: boolean;
}

export const now = () => new Date().toISOString();
export const secondsBetween = (a: string | null, b: string | null) =>
  a && b ? Math.round((Date.parse(b) - Date.parse(a)) / 100) / 10 : null;

export function recordPaths(dir: string, hasDisk: boolean): VmRecord['paths'] {
  return {
    dir,
    console: join(dir, 'console.log'),
    serialSocket: join(dir, 'serial.sock'),
    tpmState: join(dir, 'tpm'),
    swtpmSocket: join(dir, 'tpm', 'swtpm.sock'),
    ovmfVars: join(dir, 'OVMF_VARS.fd'),
    qmpSocket: join(dir, 'qmp.sock'),
    userData: join(dir, 'user-data'),
    disk: hasDisk ? join(dir, 'disk.qcow2') : null,
    sshKey: join(dir, 'manager_ed25519_key'),
  };
}

/** A new VM's record as create makes it: 'creating', nothing run yet, saved once its files are prepared. */
export function newRecord(
  input: CreateInput,
  o: { id: string; image: string; network: string; lease: Lease | null; accel: Accel; dir: string },
): VmRecord {
  return {
    id: o.id,
    name: input.name,
    image: o.image,
    cpus: input.cpus,
    memoryMiB: input.memoryMiB,
    diskGiB: input.diskGiB,
    requireAttestation: input.requireAttestation,
    waitFor: input.waitFor,
    network: o.network,
    lease: o.lease,
    accel: o.accel,
    state: 'creating',
    machineID: randomBytes(16).toString('hex'),
    hostname: input.hostname ?? null,
    metadata: input.metadata ?? {},
    sshAuthorizedKeys: input.sshAuthorizedKeys ?? [],
    createdAt: now(),
    installedAt: null,
    startedAt: null,
    bootedAt: null,
    readyAt: null,
    stoppedAt: null,
    booted: false,
    durations: { installSeconds: null, bootSeconds: null, readySeconds: null },
    lastError: null,
    hasUserData: input.userData !== null && input.userData !== '',
    attestation: {
      required: input.requireAttestation,
      ...(input.learnGolden ? { learn: true } : {}),
      userDataReleased: false,
      nonceIssuedAt: null,
      akFingerprint: null,
      akPub: null,
      initrd: null,
      ready: null,
    },
    sshHostKey: null,
    sshKey: null,
    cleanAt: null,
    cleanMemory: false,
    cleanNote: null,
    lastReset: null,
    pids: { qemu: null, swtpm: null },
    ports: { ssh: null },
    forwards: [],
    hostForwards: input.hostForwards ?? [],
    paths: recordPaths(o.dir, true),
  };
}

/** A record from an older manager gets the fields added since, with the values its VM really has. */
export function upgradeRecord(r: VmRecord, dir: string, machineID: () => string): VmRecord {
  const loose = r as Partial<VmRecord> & VmRecord;
  if (r.paths.dir !== dir) r.paths = { ...r.paths, dir };
  // A record from before the serial socket: its QEMU (if alive) has none; the next start adds it.
  if (r.paths.serialSocket === undefined) r.paths.serialSocket = null;
  if (r.paths.sshKey === undefined) r.paths.sshKey = join(dir, 'manager_ed25519_key');
  // A record from before SSH forwarding: its QEMU (if alive) forwards nothing.
  if (loose.ports === undefined) r.ports = { ssh: null };
  if (loose.forwards === undefined) r.forwards = [];
  if (loose.hostForwards === undefined) r.hostForwards = [];
  // Records from before networks: 'restricted' is the default network, 'nat' keeps its name.
  const net = loose.network as string | undefined;
  if (net === undefined || net === 'restricted') r.network = 'default';
  if (loose.lease === undefined) r.lease = null;
  if (r.attestation.akPub === undefined) r.attestation.akPub = null;
  if (loose.sshHostKey === undefined) r.sshHostKey = null;
  if (loose.sshKey === undefined) r.sshKey = null;
  if (loose.cleanAt === undefined) r.cleanAt = null;
  if (loose.cleanMemory === undefined) r.cleanMemory = false;
  if (loose.cleanNote === undefined) r.cleanNote = null;
  if (loose.lastReset === undefined) r.lastReset = null;
  if (loose.machineID === undefined) r.machineID = machineID();
  if (loose.booted === undefined) r.booted = r.readyAt !== null;
  if (loose.installedAt === undefined) r.installedAt = r.createdAt;
  if (loose.hostname === undefined) r.hostname = null;
  if (loose.metadata === undefined) r.metadata = {};
  if (loose.sshAuthorizedKeys === undefined) r.sshAuthorizedKeys = [];
  return r;
}

/** The records in memory; every change is written to vm.json and announced as 'change'. */
export class VmRecords {
  readonly events = new EventEmitter();
  private recs = new Map<string, VmRecord>();

  constructor() {
    this.events.setMaxListeners(1000);
  }

  list(): VmRecord[] {
    return [...this.recs.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  has(id: string): boolean {
    return this.recs.has(id);
  }

  find(id: string): VmRecord | undefined {
    return this.recs.get(id);
  }

  get(id: string): VmRecord {
    const r = this.recs.get(id);
    if (!r) throw new VmmError('not_found', `no VM with id "${id}": list them with GET /api/v1/vms`);
    return r;
  }

  /** Holds the record in memory without writing it (recover, before deciding its fate). */
  hold(r: VmRecord) {
    this.recs.set(r.id, r);
  }

  forget(id: string) {
    this.recs.delete(id);
  }

  save(r: VmRecord) {
    writeJsonAtomic(join(r.paths.dir, 'vm.json'), r);
    this.events.emit('change', r);
  }

  update(id: string, fn: (r: VmRecord) => void): VmRecord {
    const r = this.get(id);
    fn(r);
    this.save(r);
    return r;
  }
}
