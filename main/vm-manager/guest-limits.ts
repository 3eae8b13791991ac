/**
 * Bounds on what one guest can make the host spend (docs/vm-manager-guests.md, "Guest bounds"), and the
 * QMP event watch that notices a reset the guest made itself (its user-data is then withheld again
 * until a new initrd quote verifies).
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { vmAsset } from './assets';
import { Qmp } from './qmp';

/** Metadata connections one guest may hold at once; more are closed before any proxy process starts. */
export const METADATA_CONNECTIONS_PER_VM = 4;
/** Connections one guest may hold at once through each of its guest→host forwards (povdesk.host_forwards). */
export const HOST_FORWARD_CONNECTIONS = 8;
/** Attestation nonces: a burst of 8 per VM, then one more every 5 s (a guest needs two per boot). */
export const NONCE_BURST = 8;
export const NONCE_REFILL_MS = 5_000;
/** console.log while the VM runs: past this size the older half is dropped. */
export const CONSOLE_MAX_BYTES = 8 * 1024 * 1024;

export const METADATA_FORWARD = vmAsset('guest/metadata-fwd.sh');

/** The guestfwd command: the slot gate (metadata-fwd.sh) around the Node proxy. */
export function metadataForwardArgv(slotsDir: string, proxy: string[]): string[] {
  return ['/bin/sh', METADATA_FORWARD, slotsDir, String(METADATA_CONNECTIONS_PER_VM), ...proxy];
}

/** The guestfwd command of a guest→host forward: the same slot gate around its proxy. */
export function hostForwardArgv(slotsDir: string, proxy: string[]): string[] {
  return ['/bin/sh', METADATA_FORWARD, slotsDir, String(HOST_FORWARD_CONNECTIONS), ...proxy];
}

/** A token bucket per key: take() answers 0 when allowed, else the seconds until the next token. */
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly burst = NONCE_BURST,
    private readonly refillMs = NONCE_REFILL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  take(key: string): number {
    const t = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: t };
    b.tokens = Math.min(this.burst, b.tokens + (t - b.at) / this.refillMs);
    b.at = t;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) * this.refillMs) / 1000));
  }

  forget(key: string): void {
    this.buckets.delete(key);
  }
}

/**
 * Keeps a console log under `max` bytes: when over, its last max/2 bytes replace it, after one
 * line saying so. QEMU writes it with O_APPEND (logappend=on), so its next write lands after them;
 * bytes it writes between our read and the truncate are lost (a console, not a record).
 */
export function capConsole(file: string, max: number): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r+');
  } catch {
    return false;
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= max) return false;
    const keep = Math.floor(max / 2);
    const tail = Buffer.alloc(keep);
    const n = readSync(fd, tail, 0, keep, size - keep);
    const cut = tail.indexOf(10);
    const body = cut >= 0 && cut < n - 1 ? tail.subarray(cut + 1, n) : tail.subarray(0, n);
    const note = Buffer.from(`[vm-manager: console.log over ${max} bytes; ${size - body.length} older bytes dropped]\n`);
    ftruncateSync(fd, 0);
    writeSync(fd, note, 0, note.length, 0);
    writeSync(fd, body, 0, body.length, note.length);
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * Watches QEMU's events monitor for a reset the guest asked for (reboot inside the VM, a triple
 * fault): `onReset` runs for each. Resolves with a stop function; rejects when the monitor does not answer.
 */
export async function watchGuestResets(eventsSocket: string, onReset: () => void): Promise<() => void> {
  const q = await Qmp.open(eventsSocket, 3000);
  q.onEvent = (e) => {
    if (e.event === 'RESET' && (e.data as { guest?: unknown } | undefined)?.guest === true) onReset();
  };
  return () => q.close();
}
