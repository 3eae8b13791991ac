/**
 * Parsers for the TPM 2.0 structures a quote carries (TPM 2.0 Library, Part 2), big-endian on the
 * wire: TPMS_ATTEST (tpm2_quote -m), TPMT_SIGNATURE (-s), TPM2B_PUBLIC (tpm2_createak -u).
 * Every parser throws TpmParseError with what was wrong and where; trailing bytes are an error.
 */

export const TPM_GENERATED_VALUE = 0xff544347;
export const TPM_ST_ATTEST_QUOTE = 0x8018;

export const TPM_ALG = {
  RSA: 0x0001,
  SHA256: 0x000b,
  NULL: 0x0010,
  RSASSA: 0x0014,
  RSAPSS: 0x0016,
  ECDSA: 0x0018,
  ECC: 0x0023,
} as const;

export const TPM_ECC_NIST_P256 = 0x0003;

/** TPMA_OBJECT bits. */
export const OBJ = {
  fixedTPM: 1 << 1,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  userWithAuth: 1 << 6,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
} as const;

export class TpmParseError extends Error {
  constructor(what: string, message: string) {
    super(`${what}: ${message}`);
    this.name = 'TpmParseError';
  }
}

class Reader {
  private off = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly what: string,
  ) {}
  private need(n: number, field: string): void {
    if (this.off + n > this.buf.length) {
      throw new TpmParseError(this.what, `truncated at ${field} (offset ${this.off}, need ${n} bytes, have ${this.buf.length - this.off})`);
    }
  }
  u8(field: string): number {
    this.need(1, field);
    return this.buf.readUInt8(this.off++);
  }
  u16(field: string): number {
    this.need(2, field);
    const v = this.buf.readUInt16BE(this.off);
    this.off += 2;
    return v;
  }
  u32(field: string): number {
    this.need(4, field);
    const v = this.buf.readUInt32BE(this.off);
    this.off += 4;
    return v;
  }
  u64(field: string): bigint {
    this.need(8, field);
    const v = this.buf.readBigUInt64BE(this.off);
    this.off += 8;
    return v;
  }
  bytes(n: number, field: string): Buffer {
    this.need(n, field);
    const v = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }
  /** A TPM2B: u16 size then that many bytes. */
  sized(field: string, max = 4096): Buffer {
    const n = this.u16(`${field}.size`);
    if (n > max) throw new TpmParseError(this.what, `${field} size ${n} exceeds ${max}`);
    return this.bytes(n, field);
  }
  get offset(): number {
    return this.off;
  }
  end(): void {
    if (this.off !== this.buf.length) {
      throw new TpmParseError(this.what, `${this.buf.length - this.off} unexpected trailing bytes after offset ${this.off}`);
    }
  }
}

export interface PcrSelection {
  hash: number;
  pcrs: number[];
}

export interface Attest {
  magic: number;
  type: number;
  qualifiedSigner: Buffer;
  extraData: Buffer;
  clock: bigint;
  resetCount: number;
  restartCount: number;
  safe: boolean;
  firmwareVersion: bigint;
  pcrSelect: PcrSelection[];
  pcrDigest: Buffer;
}

function readPcrSelection(r: Reader): PcrSelection[] {
  const count = r.u32('pcrSelect.count');
  if (count > 16) throw new TpmParseError('TPMS_ATTEST', `pcrSelect.count ${count} exceeds 16 banks`);
  const out: PcrSelection[] = [];
  for (let i = 0; i < count; i++) {
    const hash = r.u16(`pcrSelect[${i}].hash`);
    const size = r.u8(`pcrSelect[${i}].sizeofSelect`);
    if (size > 8) throw new TpmParseError('TPMS_ATTEST', `pcrSelect[${i}].sizeofSelect ${size} exceeds 8`);
    const bits = r.bytes(size, `pcrSelect[${i}].pcrSelect`);
    const pcrs: number[] = [];
    for (let b = 0; b < size * 8; b++) if ((bits[b >> 3]! >> (b & 7)) & 1) pcrs.push(b);
    out.push({ hash, pcrs });
  }
  return out;
}

/**
 * Parses TPMS_ATTEST. Magic and type are returned, not checked, so the verifier can name the
 * failure; a quote's body (TPMS_QUOTE_INFO) is parsed only when type is ATTEST_QUOTE.
 */
export function parseAttest(buf: Buffer): Attest {
  const r = new Reader(buf, 'TPMS_ATTEST');
  const magic = r.u32('magic');
  const type = r.u16('type');
  const qualifiedSigner = r.sized('qualifiedSigner', 68);
  const extraData = r.sized('extraData', 64);
  const clock = r.u64('clockInfo.clock');
  const resetCount = r.u32('clockInfo.resetCount');
  const restartCount = r.u32('clockInfo.restartCount');
  const safe = r.u8('clockInfo.safe') === 1;
  const firmwareVersion = r.u64('firmwareVersion');
  let pcrSelect: PcrSelection[] = [];
  let pcrDigest: Buffer = Buffer.alloc(0);
  if (magic === TPM_GENERATED_VALUE && type === TPM_ST_ATTEST_QUOTE) {
    pcrSelect = readPcrSelection(r);
    pcrDigest = r.sized('pcrDigest', 64);
    r.end();
  }
  return { magic, type, qualifiedSigner, extraData, clock, resetCount, restartCount, safe, firmwareVersion, pcrSelect, pcrDigest };
}

export type AkKey =
  | { type: 'ecc'; curve: number; scheme: number; schemeHash: number; x: Buffer; y: Buffer }
  | { type: 'rsa'; bits: number; exponent: number; scheme: number; schemeHash: number; n: Buffer };

export interface PublicArea {
  /** The TPMT_PUBLIC bytes (inside the TPM2B); the AK fingerprint is sha256 of these. */
  raw: Buffer;
  type: number;
  nameAlg: number;
  attributes: number;
  authPolicy: Buffer;
  symmetric: number;
  key: AkKey;
}

/** Parses TPM2B_PUBLIC (size-prefixed TPMT_PUBLIC) for the two key types an AK may have. */
export function parsePublic(buf: Buffer): PublicArea {
  const outer = new Reader(buf, 'TPM2B_PUBLIC');
  const raw = outer.sized('publicArea', 1024);
  outer.end();
  const r = new Reader(raw, 'TPMT_PUBLIC');
  const type = r.u16('type');
  const nameAlg = r.u16('nameAlg');
  const attributes = r.u32('objectAttributes');
  const authPolicy = r.sized('authPolicy', 64);
  if (type !== TPM_ALG.ECC && type !== TPM_ALG.RSA) {
    throw new TpmParseError('TPMT_PUBLIC', `key type 0x${type.toString(16)} is neither ECC nor RSA`);
  }
  const symmetric = r.u16('parameters.symmetric.algorithm');
  if (symmetric !== TPM_ALG.NULL) {
    r.u16('parameters.symmetric.keyBits');
    r.u16('parameters.symmetric.mode');
  }
  const scheme = r.u16('parameters.scheme.scheme');
  const schemeHash = scheme === TPM_ALG.NULL ? TPM_ALG.NULL : r.u16('parameters.scheme.hashAlg');
  let key: AkKey;
  if (type === TPM_ALG.ECC) {
    const curve = r.u16('parameters.curveID');
    const kdf = r.u16('parameters.kdf.scheme');
    if (kdf !== TPM_ALG.NULL) r.u16('parameters.kdf.hashAlg');
    const x = r.sized('unique.x', 66);
    const y = r.sized('unique.y', 66);
    key = { type: 'ecc', curve, scheme, schemeHash, x, y };
  } else {
    const bits = r.u16('parameters.keyBits');
    const exponent = r.u32('parameters.exponent');
    const n = r.sized('unique.n', 512);
    key = { type: 'rsa', bits, exponent: exponent === 0 ? 65537 : exponent, scheme, schemeHash, n };
  }
  r.end();
  return { raw, type, nameAlg, attributes, authPolicy, symmetric, key };
}

export type Signature = { alg: 'ecdsa'; hash: number; r: Buffer; s: Buffer } | { alg: 'rsassa' | 'rsapss'; hash: number; sig: Buffer };

/** Parses TPMT_SIGNATURE (ECDSA, RSASSA or RSAPSS). */
export function parseSignature(buf: Buffer): Signature {
  const r = new Reader(buf, 'TPMT_SIGNATURE');
  const alg = r.u16('sigAlg');
  const hash = r.u16('hash');
  let sig: Signature;
  if (alg === TPM_ALG.ECDSA) {
    sig = { alg: 'ecdsa', hash, r: r.sized('signatureR', 66), s: r.sized('signatureS', 66) };
  } else if (alg === TPM_ALG.RSASSA || alg === TPM_ALG.RSAPSS) {
    sig = { alg: alg === TPM_ALG.RSASSA ? 'rsassa' : 'rsapss', hash, sig: r.sized('sig', 512) };
  } else {
    throw new TpmParseError('TPMT_SIGNATURE', `signature algorithm 0x${alg.toString(16)} is not ECDSA, RSASSA or RSAPSS`);
  }
  r.end();
  return sig;
}
