import { createHash, createPublicKey, verify as cryptoVerify, constants, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { describeZodError } from '../../../shared/contract/errors';
import type { NonceStore } from './nonce';
import { checkEvents, type EventMismatch } from './events';
import { EV, EventLogError, MAX_EVENT_LOG_BYTES, parseEventLog, replay } from './eventlog';
import type { Expectations } from './references';
import { expectedPcr11, expectedPcr13, goldenPcrs, type ImagePolicy, type Stage } from './policy';
import {
  OBJ,
  TPM_ALG,
  TPM_ECC_NIST_P256,
  TPM_GENERATED_VALUE,
  TPM_ST_ATTEST_QUOTE,
  TpmParseError,
  parseAttest,
  parsePublic,
  parseSignature,
  type PublicArea,
  type Signature,
} from './tpm';

const b64 = (max: number) =>
  z
    .string()
    .max(Math.ceil(max / 3) * 4 + 4)
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64')
    .refine((s) => s.length % 4 === 0, 'base64 length must be a multiple of 4');

/** The JSON body guest-quote.sh POSTs to /attest/quote. */
export const quoteBodySchema = lazySchema(() =>
  z
    .object({
      stage: z.enum(['initrd', 'ready']),
      nonce: z.string().regex(/^[0-9a-f]{64}$/, '64 lower-case hex characters (32 bytes)'),
      pcr_list: z.string().regex(/^\d{1,2}(?:,\d{1,2}){0,23}$/, 'a comma list of PCR numbers'),
      ak_pub: b64(1024).min(1),
      quote: b64(1024).min(1),
      signature: b64(1024).min(1),
      pcrs: b64(24 * 32),
      /** the firmware's TCG event log (binary_bios_measurements), base64; required when the image has references */
      event_log: b64(MAX_EVENT_LOG_BYTES).optional(),
    })
    .strict(),
);
export type QuoteBody = z.infer<typeof quoteBodySchema>;

/** Which check failed; null when the quote verified. The REST layer answers 400 for 'body', 403 otherwise. */
export type FailedCheck =
  'body' | 'attest' | 'nonce' | 'ak' | 'signature' | 'pcr_digest' | 'ak_pin' | 'phase' | 'event_log' | 'event' | 'golden';

export interface QuoteVerdict {
  ok: boolean;
  stage: Stage;
  message: string;
  failed: FailedCheck | null;
  /** sha256 (hex) of the AK's TPMT_PUBLIC; set once the AK parsed, even when a later check failed. */
  akFingerprint: string | null;
  /** The quoted sha256 PCR values (hex by PCR number); set once they reproduced the signed digest. */
  pcrs: Record<string, string>;
  mismatches: { pcr: string; expected: string; got: string }[];
  /** Learn mode: PCRs accepted without a golden value (record them with recordGolden). */
  learned: Record<string, string>;
  /** The event-log check (images with references): events compared, allowed by type, and the first that did not pass. */
  events: { count: number; checked: number; allowed: number; mismatch: EventMismatch | null } | null;
}

export interface VerifyRequest {
  vmId: string;
  body: unknown;
  /** The manager's NonceStore (only consume is used). */
  nonces: Pick<NonceStore, 'consume'>;
  policy: ImagePolicy;
  /** The AK fingerprint pinned by this VM's first verified initrd quote, or null before it. */
  pinnedAk: string | null;
  /** Accept quoted PCRs that have no golden value, and report them in `learned`. */
  learn?: boolean;
  /**
   * At the ready stage, the user-data released to this VM (null: none), to check PCR 13 against;
   * undefined skips the PCR 13 check (PCR 13 is still reported).
   */
  userData?: string | Buffer | null;
  /**
   * What this VM's boot must measure (references.expectationsFor), when the policy has references;
   * a string says why they could not be made (the quote is then refused, naming it).
   */
  expectations?: Expectations | string;
}

const REQUIRED_ATTRS: [keyof typeof OBJ, boolean][] = [
  ['fixedTPM', true],
  ['fixedParent', true],
  ['sensitiveDataOrigin', true],
  ['restricted', true],
  ['sign', true],
  ['decrypt', false],
];

function akProblem(pub: PublicArea): string | null {
  const wrong = REQUIRED_ATTRS.filter(([name, want]) => ((pub.attributes & OBJ[name]) !== 0) !== want).map(([name, want]) =>
    want ? `not ${name}` : name,
  );
  if (wrong.length) return `the AK is not a restricted signing key (${wrong.join(', ')})`;
  if (pub.nameAlg !== TPM_ALG.SHA256) return `the AK's name algorithm 0x${pub.nameAlg.toString(16)} is not sha256`;
  const k = pub.key;
  if (k.type === 'ecc') {
    if (k.curve !== TPM_ECC_NIST_P256) return `the AK's ECC curve 0x${k.curve.toString(16)} is not NIST P-256`;
    if (k.x.length !== 32 || k.y.length !== 32) return "the AK's ECC point is not 32+32 bytes";
    if (k.scheme !== TPM_ALG.ECDSA && k.scheme !== TPM_ALG.NULL) return "the AK's ECC scheme is not ECDSA";
  } else {
    if (k.bits !== 2048 || k.n.length !== 256) return `the AK is RSA-${k.bits}, only RSA-2048 is accepted`;
    if (k.scheme !== TPM_ALG.RSASSA && k.scheme !== TPM_ALG.RSAPSS && k.scheme !== TPM_ALG.NULL) {
      return "the AK's RSA scheme is neither RSASSA nor RSAPSS";
    }
  }
  return null;
}

function keyObject(pub: PublicArea): KeyObject {
  const k = pub.key;
  if (k.type === 'ecc') {
    return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: k.x.toString('base64url'), y: k.y.toString('base64url') }, format: 'jwk' });
  }
  const e = Buffer.alloc(4);
  e.writeUInt32BE(k.exponent);
  let i = 0;
  while (i < 3 && e[i] === 0) i++;
  return createPublicKey({ key: { kty: 'RSA', n: k.n.toString('base64url'), e: e.subarray(i).toString('base64url') }, format: 'jwk' });
}

function signatureProblem(pub: PublicArea, sig: Signature, attest: Buffer): string | null {
  if (sig.hash !== TPM_ALG.SHA256) return `the signature's hash 0x${sig.hash.toString(16)} is not sha256`;
  const k = pub.key;
  let good: boolean;
  if (k.type === 'ecc') {
    if (sig.alg !== 'ecdsa') return `an ECC AK cannot make a ${sig.alg} signature`;
    if (sig.r.length > 32 || sig.s.length > 32) return "the ECDSA signature's r or s is longer than 32 bytes";
    const rs = Buffer.concat([Buffer.alloc(32 - sig.r.length), sig.r, Buffer.alloc(32 - sig.s.length), sig.s]);
    good = cryptoVerify('sha256', attest, { key: keyObject(pub), dsaEncoding: 'ieee-p1363' }, rs);
  } else {
    if (sig.alg === 'ecdsa') return 'an RSA AK cannot make an ECDSA signature';
    const padding = sig.alg === 'rsapss' ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING;
    good = cryptoVerify('sha256', attest, { key: keyObject(pub), padding, saltLength: constants.RSA_PSS_SALTLEN_AUTO }, sig.sig);
  }
  return good ? null : 'the signature does not verify with ak_pub over the quote (tampered quote, or signed by another key)';
}

/**
 * Verifies a quote body from guest-quote.sh. Checks in this order, stopping at the first failure:
 * body shape; TPMS_ATTEST magic and type; nonce (issued to this VM, unexpired, unused — consumed
 * here, and equal to the quote's qualifying data); AK attributes; signature; PCR values reproduce
 * pcrDigest and cover the stage's PCRs; AK pinning; PCR 11 phase path (and PCR 13 user-data when
 * given); then, for an image with reference measurements, the event log (replayed to the quoted
 * PCRs, each event checked), else golden values (learn mode accepts missing ones). Never throws for
 * bad input.
 */
export function verifyQuote(req: VerifyRequest): QuoteVerdict {
  const rawStage = (req.body as { stage?: unknown } | null)?.stage;
  const verdict: QuoteVerdict = {
    ok: false,
    stage: rawStage === 'ready' ? 'ready' : 'initrd',
    message: '',
    failed: null,
    akFingerprint: null,
    pcrs: {},
    mismatches: [],
    learned: {},
    events: null,
  };
  const fail = (failed: FailedCheck, message: string): QuoteVerdict => {
    verdict.failed = failed;
    verdict.message = message;
    return verdict;
  };

  const parsed = quoteBodySchema.safeParse(req.body);
  if (!parsed.success) return fail('body', describeZodError('invalid quote body', parsed.error));
  const body = parsed.data;
  const stage = body.stage;
  verdict.stage = stage;

  // 1. magic and type.
  const attestBytes = Buffer.from(body.quote, 'base64');
  let attest;
  try {
    attest = parseAttest(attestBytes);
  } catch (e) {
    return fail('attest', `the quote is not a TPMS_ATTEST: ${(e as Error).message}`);
  }
  if (attest.magic !== TPM_GENERATED_VALUE) {
    return fail('attest', `the quote's magic is 0x${attest.magic.toString(16)}, not TPM_GENERATED (0xff544347): not produced by a TPM`);
  }
  if (attest.type !== TPM_ST_ATTEST_QUOTE) {
    return fail('attest', `the attestation type is 0x${attest.type.toString(16)}, not ATTEST_QUOTE (0x8018)`);
  }

  // 2. nonce: consumed whatever happens next, so a failed quote cannot be retried with it.
  const nonceCheck = req.nonces.consume(req.vmId, body.nonce);
  if (!nonceCheck.ok) return fail('nonce', nonceCheck.message);
  if (attest.extraData.toString('hex') !== body.nonce) {
    return fail(
      'nonce',
      `the quote's qualifying data (${attest.extraData.toString('hex').slice(0, 16)}…) is not the nonce sent ` +
        `(${body.nonce.slice(0, 16)}…): a quote made for another nonce`,
    );
  }

  // 3. AK attributes.
  let pub: PublicArea;
  try {
    pub = parsePublic(Buffer.from(body.ak_pub, 'base64'));
  } catch (e) {
    return fail('ak', `ak_pub is not a TPM2B_PUBLIC: ${(e as Error).message}`);
  }
  verdict.akFingerprint = createHash('sha256').update(pub.raw).digest('hex');
  const ak = akProblem(pub);
  if (ak) return fail('ak', ak);

  // 4. signature.
  let sig: Signature;
  try {
    sig = parseSignature(Buffer.from(body.signature, 'base64'));
  } catch (e) {
    return fail('signature', `the signature is not a TPMT_SIGNATURE: ${(e as Error).message}`);
  }
  const sigProblem = signatureProblem(pub, sig, attestBytes);
  if (sigProblem) return fail('signature', sigProblem);

  // 5. PCR values reproduce pcrDigest and cover the stage.
  if (attest.pcrSelect.length !== 1 || attest.pcrSelect[0]!.hash !== TPM_ALG.SHA256) {
    return fail(
      'pcr_digest',
      `the quote must select exactly the sha256 bank, it ` +
        `selects ${attest.pcrSelect.map((s) => `0x${s.hash.toString(16)}`).join(', ') || 'nothing'}`,
    );
  }
  const quoted = attest.pcrSelect[0]!.pcrs;
  const listed = body.pcr_list.split(',').map(Number);
  const sortedListed = [...new Set(listed)].sort((a, b) => a - b);
  if (sortedListed.join(',') !== quoted.join(',')) {
    return fail('pcr_digest', `pcr_list ${body.pcr_list} is not what the quote selects (${quoted.join(',')})`);
  }
  const values = Buffer.from(body.pcrs, 'base64');
  if (values.length !== quoted.length * 32) {
    return fail('pcr_digest', `pcrs holds ${values.length} bytes, expected ${quoted.length} sha256 values (${quoted.length * 32} bytes)`);
  }
  const digest = createHash('sha256').update(values).digest();
  if (!digest.equals(attest.pcrDigest)) {
    return fail(
      'pcr_digest',
      `the PCR values sent do not reproduce the quote's pcrDigest (${attest.pcrDigest.toString('hex').slice(0, 16)}…): a PCR ` +
        `value was changed`,
    );
  }
  const pcrs: Record<string, string> = {};
  quoted.forEach((p, i) => (pcrs[String(p)] = values.subarray(i * 32, (i + 1) * 32).toString('hex')));
  verdict.pcrs = pcrs;
  const missing = req.policy.pcrs[stage].filter((p) => !(String(p) in pcrs));
  if (missing.length) {
    return fail('pcr_digest', `the ${stage} quote does not cover PCR ${missing.join(', ')} required by the image policy`);
  }

  // 6. AK pin. The vm-manager always passes the AK it provisioned in the VM's swtpm (attest/provision.ts);
  // null (the first verified initrd quote defines the AK) is left for callers without a host-made key.
  if (req.pinnedAk === null) {
    if (stage === 'ready') {
      return fail(
        'ak_pin',
        "a ready quote arrived before any verified initrd quote pinned this VM's AK; the VM must attest at the initrd stage first",
      );
    }
  } else if (req.pinnedAk !== verdict.akFingerprint) {
    return fail(
      'ak_pin',
      `AK is not this VM's TPM key: the quote was signed by another AK (${verdict.akFingerprint.slice(0, 16)}…) than the one ` +
        `pinned for this VM's swtpm (${req.pinnedAk.slice(0, 16)}…)`,
    );
  }

  // 7. computed PCRs: 11 (phase path) and, at ready, 13 (user-data).
  const pcr11 = expectedPcr11(stage);
  if (pcrs['11'] !== pcr11) {
    verdict.mismatches.push({ pcr: '11', expected: pcr11, got: pcrs['11'] ?? '' });
    return fail('phase', `phase mismatch: pcr 11 expected ${pcr11} (${stage} phase path), got ${pcrs['11']}`);
  }
  if (stage === 'ready' && req.userData !== undefined && '13' in pcrs) {
    const pcr13 = expectedPcr13(req.userData);
    if (pcrs['13'] !== pcr13) {
      verdict.mismatches.push({ pcr: '13', expected: pcr13, got: pcrs['13']! });
      return fail(
        'phase',
        `user-data mismatch: pcr 13 expected ${pcr13} (${req.userData === null ? 'no user-data' : 'the user-data released'}), ` +
          `got ${pcrs['13']}`,
      );
    }
  }

  // 8. the event log against the image's references, when it has them; else golden values.
  if (req.policy.references) {
    const problem = eventLogProblem(verdict, body, req.expectations);
    if (problem) return fail(problem[0], problem[1]);
  } else {
    const golden = req.policy.golden.sha256;
    const unknown: string[] = [];
    for (const p of goldenPcrs(req.policy, stage)) {
      const k = String(p);
      const want = golden[k];
      if (want === undefined) {
        if (req.learn) verdict.learned[k] = pcrs[k]!;
        else unknown.push(k);
      } else if (want !== pcrs[k]) {
        verdict.mismatches.push({ pcr: k, expected: want, got: pcrs[k]! });
      }
    }
    if (verdict.mismatches.length) {
      const m = verdict.mismatches.map((x) => `pcr ${x.pcr} expected ${x.expected}, got ${x.got}`).join('; ');
      return fail('golden', `golden mismatch: ${m}`);
    }
    if (unknown.length) {
      const why = req.policy.unpredictable ? ` (it has no reference measurements: ${req.policy.unpredictable})` : '';
      return fail(
        'golden',
        `no golden value for pcr ${unknown.join(', ')} in image ${req.policy.image_id} ${req.policy.image_version}${why}; learn ` +
          `golden values for it (a learn boot)`,
      );
    }
  }

  verdict.ok = true;
  const learnedNote = Object.keys(verdict.learned).length ? `; learned pcr ${Object.keys(verdict.learned).join(', ')}` : '';
  const eventsNote = verdict.events
    ? `; event log replayed (${verdict.events.count} events: ${verdict.events.checked} checked against the ` +
      `references, ${verdict.events.allowed} allowed by type)`
    : '';
  verdict.message = `${stage} quote verified${eventsNote}${learnedNote}`;
  return verdict;
}

const ZERO = '00'.repeat(32);
/** PCRs the verifier computes itself (phase, user-data): the firmware's log must not touch them. */
const COMPUTED = new Set([11, 13]);

/**
 * Replays the event log, requires the replay to equal every quoted PCR but the computed ones (and
 * the log to touch no PCR the quote leaves out), then checks each event against the expectations.
 * Returns the failed check and its message, or null; fills verdict.events and verdict.mismatches.
 */
function eventLogProblem(
  verdict: QuoteVerdict,
  body: QuoteBody,
  expectations: Expectations | string | undefined,
): [FailedCheck, string] | null {
  if (typeof expectations !== 'object')
    return ['event', `cannot check the event log: ${expectations ?? 'no reference measurements were resolved for this VM'}`];
  if (!body.event_log) {
    return [
      'event_log',
      'the quote came without the firmware event log (event_log): this image is checked event by event against its reference ' +
        "measurements; update the guest's guest-quote.sh",
    ];
  }
  let log;
  try {
    log = parseEventLog(Buffer.from(body.event_log, 'base64'));
  } catch (e) {
    if (e instanceof EventLogError) return ['event_log', `the event log is malformed: ${e.message}`];
    throw e;
  }
  const replayed = replay(log);
  const quoted = new Set(Object.keys(verdict.pcrs).map(Number));
  for (const e of log.events) {
    if (e.type === EV.NO_ACTION || (quoted.has(e.pcr) && !COMPUTED.has(e.pcr))) continue;
    return [
      'event_log',
      `event ${e.index} of the log extends PCR ${e.pcr}, ` +
        `which ${COMPUTED.has(e.pcr) ? 'only the verifier computes' : 'the quote does not cover'}: the log cannot be checked against ` +
        `this quote`,
    ];
  }
  for (const p of [...quoted].sort((a, b) => a - b)) {
    if (COMPUTED.has(p)) continue;
    const want = replayed[String(p)] ?? ZERO;
    const got = verdict.pcrs[String(p)]!;
    if (want !== got) verdict.mismatches.push({ pcr: String(p), expected: want, got });
  }
  if (verdict.mismatches.length) {
    const m = verdict.mismatches.map((x) => `pcr ${x.pcr} replays to ${x.expected}, the quote says ${x.got}`).join('; ');
    return ['event_log', `the event log does not replay to the quoted PCRs (${m}): it was truncated, reordered, extended or forged`];
  }
  const check = checkEvents(log, expectations);
  verdict.events = { count: log.events.length, checked: check.checked, allowed: check.allowed, mismatch: check.mismatch };
  if (check.mismatch) {
    const m = check.mismatch;
    return [
      'event',
      `event ${m.event} (${m.type}, PCR ${m.pcr}) does not match the image's reference measurements: ${m.what}; ` +
        `expected ${m.expected}, seen ${m.seen}`,
    ];
  }
  return null;
}

export { TpmParseError };
