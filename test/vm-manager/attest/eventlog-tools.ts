/**
 * Test tools for TCG event logs: read and write one whole (every bank's digest kept, so a changed
 * log stays a log tpm2_eventlog reads), make events, extend a log's events into a real swtpm, and
 * ask tpm2_eventlog what a log replays to.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface RawEvent {
  pcr: number;
  type: number;
  digests: { alg: number; digest: Buffer }[];
  data: Buffer;
}
export interface RawLog {
  header: Buffer;
  algs: { alg: number; size: number }[];
  events: RawEvent[];
}

const HASH: Record<number, string> = { 0x4: 'sha1', 0xb: 'sha256', 0xc: 'sha384', 0xd: 'sha512' };

export function readRaw(buf: Buffer): RawLog {
  const headerSize = buf.readUInt32LE(28);
  const header = buf.subarray(0, 32 + headerSize);
  const spec = buf.subarray(32, 32 + headerSize);
  const count = spec.readUInt32LE(24);
  const algs = Array.from({ length: count }, (_, i) => ({ alg: spec.readUInt16LE(28 + i * 4), size: spec.readUInt16LE(30 + i * 4) }));
  let o = 32 + headerSize;
  const events: RawEvent[] = [];
  while (o < buf.length) {
    const pcr = buf.readUInt32LE(o);
    const type = buf.readUInt32LE(o + 4);
    const n = buf.readUInt32LE(o + 8);
    o += 12;
    const digests: RawEvent['digests'] = [];
    for (let i = 0; i < n; i++) {
      const alg = buf.readUInt16LE(o);
      const size = algs.find((a) => a.alg === alg)!.size;
      digests.push({ alg, digest: Buffer.from(buf.subarray(o + 2, o + 2 + size)) });
      o += 2 + size;
    }
    const size = buf.readUInt32LE(o);
    events.push({ pcr, type, digests, data: Buffer.from(buf.subarray(o + 4, o + 4 + size)) });
    o += 4 + size;
  }
  return { header, algs, events };
}

export function writeRaw(log: RawLog): Buffer {
  const parts: Buffer[] = [log.header];
  for (const e of log.events) {
    const head = Buffer.alloc(12);
    head.writeUInt32LE(e.pcr, 0);
    head.writeUInt32LE(e.type, 4);
    head.writeUInt32LE(e.digests.length, 8);
    parts.push(head);
    for (const d of e.digests) {
      const a = Buffer.alloc(2);
      a.writeUInt16LE(d.alg);
      parts.push(a, d.digest);
    }
    const size = Buffer.alloc(4);
    size.writeUInt32LE(e.data.length);
    parts.push(size, e.data);
  }
  return Buffer.concat(parts);
}

/** An event whose every bank holds the hash of `hashed` (default: its data), the way firmware logs most events. */
export function rawEvent(log: RawLog, pcr: number, type: number, data: Buffer, hashed: Buffer = data): RawEvent {
  return { pcr, type, data, digests: log.algs.map(({ alg }) => ({ alg, digest: createHash(HASH[alg]!).update(hashed).digest() })) };
}

/** The same event with its sha256 digest replaced (the other banks keep theirs: only sha256 is quoted here). */
export function withSha256(e: RawEvent, hex: string): RawEvent {
  return { ...e, digests: e.digests.map((d) => (d.alg === 0xb ? { alg: d.alg, digest: Buffer.from(hex, 'hex') } : d)) };
}

export const sha256Of = (e: RawEvent) => e.digests.find((d) => d.alg === 0xb)!.digest.toString('hex');

/** Extends every measured event's sha256 digest into a (fresh) swtpm, as the firmware would have. */
export async function extendInto(tcti: string, events: RawEvent[]): Promise<void> {
  const env = { ...process.env, TPM2TOOLS_TCTI: tcti };
  for (const e of events) {
    if (e.type === 0x3) continue; // EV_NO_ACTION is never extended
    await run('tpm2_pcrextend', [`${e.pcr}:sha256=${sha256Of(e)}`], { env });
  }
}

/** tpm2-tools' own replay of a log file: its "pcrs: sha256:" section, PCR → hex. */
export async function eventlogReplay(file: string): Promise<Record<string, string>> {
  const { stdout } = await run('tpm2_eventlog', [file], { maxBuffer: 64 * 1024 * 1024 });
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => /^\s+sha256:\s*$/.test(l) && lines.slice(0, lines.indexOf(l)).some((x) => /^pcrs:/.test(x)));
  const out: Record<string, string> = {};
  for (const l of lines.slice(at + 1)) {
    const m = /^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$/.exec(l);
    if (!m) break;
    out[m[1]!] = m[2]!.toLowerCase().padStart(64, '0');
  }
  return out;
}
