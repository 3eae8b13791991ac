/**
 * The TCG event log a guest sends with its quote (`/sys/kernel/security/tpm0/binary_bios_measurements`):
 * the crypto-agile format of the TCG PC Client Platform Firmware Profile (a TCG_PCR_EVENT header
 * carrying the "Spec ID Event03", then TCG_PCR_EVENT2 records), parsed and replayed in the sha256
 * bank. What the events must say is events.ts's business; this file only reads them.
 */
import { createHash } from 'node:crypto';

/** Event types this verifier names (TCG PC Client PFP, section 10.4.1). */
export const EV = {
  PREBOOT_CERT: 0x0,
  POST_CODE: 0x1,
  NO_ACTION: 0x3,
  SEPARATOR: 0x4,
  ACTION: 0x5,
  EVENT_TAG: 0x6,
  S_CRTM_CONTENTS: 0x7,
  S_CRTM_VERSION: 0x8,
  CPU_MICROCODE: 0x9,
  PLATFORM_CONFIG_FLAGS: 0xa,
  TABLE_OF_DEVICES: 0xb,
  COMPACT_HASH: 0xc,
  IPL: 0xd,
  IPL_PARTITION_DATA: 0xe,
  NONHOST_CODE: 0xf,
  NONHOST_CONFIG: 0x10,
  NONHOST_INFO: 0x11,
  OMIT_BOOT_DEVICE_EVENTS: 0x12,
  EFI_VARIABLE_DRIVER_CONFIG: 0x80000001,
  EFI_VARIABLE_BOOT: 0x80000002,
  EFI_BOOT_SERVICES_APPLICATION: 0x80000003,
  EFI_BOOT_SERVICES_DRIVER: 0x80000004,
  EFI_RUNTIME_SERVICES_DRIVER: 0x80000005,
  EFI_GPT_EVENT: 0x80000006,
  EFI_ACTION: 0x80000007,
  EFI_PLATFORM_FIRMWARE_BLOB: 0x80000008,
  EFI_HANDOFF_TABLES: 0x80000009,
  EFI_PLATFORM_FIRMWARE_BLOB2: 0x8000000a,
  EFI_HANDOFF_TABLES2: 0x8000000b,
  EFI_VARIABLE_BOOT2: 0x8000000c,
  EFI_GPT_EVENT2: 0x8000000d,
  EFI_HCRTM_EVENT: 0x80000010,
  EFI_VARIABLE_AUTHORITY: 0x800000e0,
  EFI_SPDM_FIRMWARE_BLOB: 0x800000e1,
  EFI_SPDM_FIRMWARE_CONFIG: 0x800000e2,
} as const;

const NAMES = new Map<number, string>(Object.entries(EV).map(([k, v]) => [v, `EV_${k}`]));
/** "EV_EFI_ACTION", or the number in hex for a type this verifier does not know. */
export const eventTypeName = (t: number) => NAMES.get(t) ?? `0x${t.toString(16).padStart(8, '0')}`;

const TPM_ALG_SHA256 = 0x000b;
/** Bounds: a log over these is refused rather than parsed (a guest could send anything). */
export const MAX_EVENT_LOG_BYTES = 1024 * 1024;
const MAX_EVENTS = 20_000;
const MAX_EVENT_DATA = 256 * 1024;

export interface TcgEvent {
  /** position in the log, 0 = the Spec ID header */
  index: number;
  pcr: number;
  type: number;
  /** the sha256 digest extended (hex); null for the header, which carries only a SHA-1 slot */
  sha256: string | null;
  data: Buffer;
}

export interface EventLog {
  events: TcgEvent[];
  /** the locality PCR 0 started from (an EV_NO_ACTION "StartupLocality" event; 0 without one) */
  startupLocality: number;
}

export class EventLogError extends Error {}

class Reader {
  off = 0;
  constructor(private readonly b: Buffer) {}
  need(n: number, what: string) {
    if (n < 0 || this.off + n > this.b.length)
      throw new EventLogError(`the event log ends inside ${what} (byte ${this.off} of ${this.b.length})`);
  }
  u8(what: string) {
    this.need(1, what);
    return this.b.readUInt8(this.off++);
  }
  u16(what: string) {
    this.need(2, what);
    const v = this.b.readUInt16LE(this.off);
    this.off += 2;
    return v;
  }
  u32(what: string) {
    this.need(4, what);
    const v = this.b.readUInt32LE(this.off);
    this.off += 4;
    return v;
  }
  bytes(n: number, what: string) {
    this.need(n, what);
    const v = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }
  get done() {
    return this.off >= this.b.length;
  }
}

const SPEC_ID = Buffer.from('Spec ID Event03\0', 'latin1');
const STARTUP_LOCALITY = Buffer.from('StartupLocality\0', 'latin1');

/** Parses a crypto-agile TCG event log. Throws EventLogError saying where it is malformed. */
export function parseEventLog(buf: Buffer): EventLog {
  if (buf.length > MAX_EVENT_LOG_BYTES)
    throw new EventLogError(`the event log is ${buf.length} bytes, over the ${MAX_EVENT_LOG_BYTES}-byte limit`);
  const r = new Reader(buf);
  // The header: a TCG_PCR_EVENT (SHA-1 layout) whose data is the Spec ID Event03.
  const pcr0 = r.u32('the header');
  const type0 = r.u32('the header');
  r.bytes(20, 'the header');
  const size0 = r.u32('the header');
  if (size0 > 4096) throw new EventLogError(`the header's Spec ID event claims ${size0} bytes`);
  const spec = r.bytes(size0, 'the Spec ID event');
  if (pcr0 !== 0 || type0 !== EV.NO_ACTION || spec.length < 29 || !spec.subarray(0, 16).equals(SPEC_ID)) {
    throw new EventLogError(
      'the event log does not start with a "Spec ID Event03" header: only the crypto-agile (TPM 2.0) format is accepted',
    );
  }
  const sr = new Reader(spec);
  sr.bytes(16 + 4 + 4, 'the Spec ID event'); // signature, platformClass, version minor/major/errata, uintnSize
  const algCount = sr.u32('the Spec ID event');
  if (algCount < 1 || algCount > 8) throw new EventLogError(`the Spec ID event lists ${algCount} hash algorithms`);
  const sizes = new Map<number, number>();
  for (let i = 0; i < algCount; i++) {
    const alg = sr.u16('the algorithm list');
    const size = sr.u16('the algorithm list');
    if (size < 1 || size > 64) throw new EventLogError(`algorithm 0x${alg.toString(16)} has a digest size of ${size}`);
    sizes.set(alg, size);
  }
  if (sizes.get(TPM_ALG_SHA256) !== 32) throw new EventLogError('the event log has no sha256 bank (32-byte digests)');
  const events: TcgEvent[] = [{ index: 0, pcr: 0, type: EV.NO_ACTION, sha256: null, data: spec }];
  let startupLocality = 0;
  while (!r.done) {
    const index = events.length;
    if (index > MAX_EVENTS) throw new EventLogError(`the event log holds more than ${MAX_EVENTS} events`);
    const at = `event ${index}`;
    const pcr = r.u32(at);
    if (pcr > 23) throw new EventLogError(`${at} names PCR ${pcr}`);
    const type = r.u32(at);
    const count = r.u32(at);
    if (count !== algCount) throw new EventLogError(`${at} carries ${count} digests, the header announced ${algCount}`);
    let sha256: string | null = null;
    for (let i = 0; i < count; i++) {
      const alg = r.u16(at);
      const size = sizes.get(alg);
      if (size === undefined)
        throw new EventLogError(`${at} has a digest of algorithm 0x${alg.toString(16)}, which the header did not announce`);
      const d = r.bytes(size, at);
      if (alg === TPM_ALG_SHA256) sha256 = d.toString('hex');
    }
    if (sha256 === null) throw new EventLogError(`${at} has no sha256 digest`);
    const size = r.u32(at);
    if (size > MAX_EVENT_DATA) throw new EventLogError(`${at} claims ${size} bytes of data`);
    const data = Buffer.from(r.bytes(size, at));
    if (type === EV.NO_ACTION && pcr === 0 && data.length === 17 && data.subarray(0, 16).equals(STARTUP_LOCALITY)) {
      startupLocality = data[16]!;
    }
    events.push({ index, pcr, type, sha256, data });
  }
  return { events, startupLocality };
}

/**
 * The sha256 PCR values the log extends to: each PCR starts at zero (PCR 0 at the startup
 * locality) and takes extend(pcr, digest) for every event but EV_NO_ACTION, which is never
 * extended. PCRs no event touches are absent.
 */
export function replay(log: EventLog): Record<string, string> {
  const pcrs = new Map<number, Buffer>();
  for (const e of log.events) {
    if (e.type === EV.NO_ACTION || e.sha256 === null) continue;
    let cur = pcrs.get(e.pcr);
    if (!cur) {
      cur = Buffer.alloc(32);
      if (e.pcr === 0) cur[31] = log.startupLocality;
    }
    pcrs.set(e.pcr, createHash('sha256').update(cur).update(Buffer.from(e.sha256, 'hex')).digest());
  }
  return Object.fromEntries([...pcrs].sort((a, b) => a[0] - b[0]).map(([p, v]) => [String(p), v.toString('hex')]));
}
