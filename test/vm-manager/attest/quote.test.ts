/**
 * guest-quote.sh under busybox sh against a real swtpm on loopback, verified by our verifier and by
 * tpm2_checkquote (tpm2-tools) on the same quotes: both accept the genuine ones and both reject each
 * tampered one.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../../support/system';
import { newPolicy, recordGolden, expectedPcr11, expectedPcr13, type ImagePolicy } from '../../../main/vm-manager/attest/policy';
import { verifyQuote, type QuoteVerdict } from '../../../main/vm-manager/attest/verify';
import {
  SYSTEM_NEEDS,
  checkquote,
  cleanup,
  guestPath,
  pcrExtend,
  quoteDirect,
  runGuestQuote,
  startMetadataStub,
  startSwtpm,
  tempDir,
  type MetadataStub,
  type Swtpm,
  type WireBody,
} from './harness';

const skip = needs(SYSTEM_NEEDS);
const VM = 'vm-a';
const INITRD = '0,1,2,3,4,5,6,7,11';
const READY = '0,1,2,3,4,5,6,7,11,13';

describe.skipIf(skip)('guest-quote.sh + verifier + tpm2_checkquote on a real swtpm', () => {
  let root: string;
  let tpm: Swtpm;
  let other: Swtpm;
  let stub: MetadataStub;
  let bin: string;
  let stateDir: string;
  let initrdBody: WireBody;
  let pinned: string;
  let golden: ImagePolicy;
  let n = 0;
  const scratch = () => join(root, `s${n++}`);

  const guest = (stage: string, extra?: Record<string, string>) =>
    runGuestQuote([stage, '127.0.0.1', String(stub.port)], { bin, tcti: tpm.tcti, stateDir, ...(extra ? { extra } : {}) });

  /**
   * A genuine quote over a fresh nonce issued to VM (not yet consumed). Ready stage by default:
   * once the script has run the ready stage, PCR 11 holds the ready phase path.
   */
  const fresh = async (stage: 'initrd' | 'ready' = 'ready', on: Swtpm = tpm): Promise<WireBody> =>
    quoteDirect(scratch(), on.tcti, stage, stub.nonces.issue(VM), stage === 'initrd' ? INITRD : READY);

  const verify = (body: unknown, opts: { policy?: ImagePolicy; pinnedAk?: string | null; learn?: boolean } = {}): QuoteVerdict =>
    verifyQuote({
      vmId: VM,
      body,
      nonces: stub.nonces,
      policy: opts.policy ?? golden,
      pinnedAk: opts.pinnedAk === undefined ? pinned : opts.pinnedAk,
      learn: opts.learn ?? false,
    });

  beforeAll(async () => {
    root = tempDir('attest');
    tpm = await startSwtpm(root, 'tpm');
    other = await startSwtpm(root, 'other');
    bin = await guestPath(root);
    stateDir = join(root, 'guest-state');
    stub = await startMetadataStub({ vmId: VM, pinnedAk: null, policy: newPolicy('test-image', '1'), learn: true });
  });

  afterAll(async () => {
    await stub?.close();
    await tpm?.stop();
    await other?.stop();
    if (root) cleanup(root);
  });

  it('the initrd quote from the script verifies (learn mode), pins the AK, and tpm2_checkquote accepts it', async () => {
    const r = await guest('initrd');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ stage: 'initrd', verified: true });
    const got = stub.received.at(-1)!;
    expect(got.verdict.ok).toBe(true);
    expect(got.verdict.learned).toHaveProperty('0');
    expect(got.verdict.pcrs['11']).toBe(expectedPcr11('initrd'));
    initrdBody = got.body as WireBody;
    expect(initrdBody.pcr_list).toBe(INITRD);
    pinned = stub.state.pinnedAk!;
    expect(pinned).toMatch(/^[0-9a-f]{64}$/);
    expect(await checkquote(scratch(), initrdBody)).toBe(true);

    // From here on the tests verify against golden values learned from this quote.
    golden = recordGolden(newPolicy('test-image', '1'), got.verdict.pcrs);
    expect(Object.keys(golden.golden.sha256)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
    stub.state.policy = golden;
    stub.state.learn = false;
  });

  it('the ready quote (PCR 13 = the user-data applied) verifies with the pinned AK, and tpm2_checkquote accepts it', async () => {
    const userData = join(root, 'user-data');
    writeFileSync(userData, '{"ignition":{"version":"3.4.0"}}');
    stub.state.userData = '{"ignition":{"version":"3.4.0"}}';
    const r = await guest('ready', { ATTEST_USER_DATA_FILE: userData });
    expect(r.code, r.stderr).toBe(0);
    const got = stub.received.at(-1)!;
    expect(got.verdict).toMatchObject({ ok: true, stage: 'ready', akFingerprint: pinned });
    expect(got.verdict.pcrs['11']).toBe(expectedPcr11('ready'));
    expect(got.verdict.pcrs['13']).toBe(expectedPcr13('{"ignition":{"version":"3.4.0"}}'));
    expect(await checkquote(scratch(), got.body as WireBody)).toBe(true);

    // Another user-data than the one released → PCR 13 rejects it.
    stub.state.userData = 'something else';
    const again = await guest('ready', { ATTEST_USER_DATA_FILE: userData });
    expect(again.code).toBe(1);
    expect(stub.received.at(-1)!.verdict.message).toMatch(/^user-data mismatch: pcr 13 expected/);
    delete stub.state.userData;
  });

  it('a second run at the same stage re-quotes without extending PCR 11 again, and ATTEST_PCRS extends the list', async () => {
    const r = await guest('ready', { ATTEST_PCRS: '0,1,2,3,4,5,6,7,9,11,13' });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const v = stub.received.at(-1)!.verdict;
    expect(Object.keys(v.pcrs)).toContain('9');
    expect(v.pcrs['11']).toBe(expectedPcr11('ready'));
  });

  it('wrong nonce: both reject', async () => {
    const body = await fresh();
    const otherNonce = stub.nonces.issue(VM);
    const tampered = { ...body, nonce: otherNonce };
    const v = verify(tampered);
    expect(v).toMatchObject({ ok: false, failed: 'nonce' });
    expect(v.message).toMatch(/qualifying data .* is not the nonce sent/);
    expect(await checkquote(scratch(), body, { nonce: otherNonce })).toBe(false);
    expect(await checkquote(scratch(), body)).toBe(true); // the untampered quote passes
  });

  it('a nonce never issued, or issued to another VM: rejected', async () => {
    const body = await fresh();
    const otherVm = stub.nonces.issue('vm-b');
    const v1 = verify({ ...body, nonce: 'ab'.repeat(32) });
    expect(v1.failed).toBe('nonce');
    expect(v1.message).toMatch(/never issued/);
    const v2 = verify({ ...body, nonce: otherVm });
    expect(v2.message).toMatch(/issued to another VM/);
  });

  it('a changed PCR value: both reject', async () => {
    const body = await fresh();
    const pcrs = Buffer.from(body.pcrs, 'base64');
    pcrs[4 * 32 + 7]! ^= 0x01; // PCR 4
    const tampered = { ...body, pcrs: pcrs.toString('base64') };
    const v = verify(tampered);
    expect(v).toMatchObject({ ok: false, failed: 'pcr_digest' });
    expect(v.message).toMatch(/do not reproduce the quote's pcrDigest/);
    expect(await checkquote(scratch(), tampered)).toBe(false);
  });

  it('a flipped signature byte: both reject', async () => {
    const body = await fresh();
    const sig = Buffer.from(body.signature, 'base64');
    sig[10]! ^= 0x80; // inside r
    const tampered = { ...body, signature: sig.toString('base64') };
    const v = verify(tampered);
    expect(v).toMatchObject({ ok: false, failed: 'signature' });
    expect(v.message).toMatch(/does not verify/);
    expect(await checkquote(scratch(), tampered)).toBe(false);
  });

  it('a flipped byte in the attest itself: both reject (signature)', async () => {
    const body = await fresh();
    const q = Buffer.from(body.quote, 'base64');
    q[q.length - 40]! ^= 0x01; // inside clockInfo / firmwareVersion: still parses
    const tampered = { ...body, quote: q.toString('base64') };
    expect(verify(tampered).failed).toBe('signature');
    expect(await checkquote(scratch(), tampered)).toBe(false);
  });

  it('another AK: a quote from another TPM is rejected against the pinned AK by both', async () => {
    // Another TPM with its own provisioned AK.
    const r = await runGuestQuote(['initrd', '127.0.0.1', String(stub.port)], {
      bin,
      tcti: other.tcti,
      stateDir: join(root, 'other-state'),
    });
    expect(r.code).toBe(1); // the stub has AK `pinned` for this VM
    expect(stub.received.at(-1)!.verdict).toMatchObject({ failed: 'ak_pin' });
    expect(stub.received.at(-1)!.verdict.message).toMatch(/signed by another AK/);

    const body = await fresh('initrd', other);
    const v = verify(body);
    expect(v.failed).toBe('ak_pin');
    // Swapping in the pinned AK's public key: the signature no longer verifies.
    const swapped = { ...body, ak_pub: initrdBody.ak_pub };
    const nonce2 = stub.nonces.issue(VM);
    const body2 = await quoteDirect(scratch(), other.tcti, 'initrd', nonce2, INITRD);
    expect(verify({ ...body2, ak_pub: initrdBody.ak_pub }).failed).toBe('signature');
    expect(await checkquote(scratch(), swapped)).toBe(false); // checkquote with the pinned AK
    expect(await checkquote(scratch(), body)).toBe(true); // ...while the other AK's own key verifies it
  });

  it('a replayed nonce: ours rejects the replay; checkquote rejects it against a fresh nonce', async () => {
    const body = await fresh();
    expect(verify(body).ok).toBe(true);
    const v = verify(body);
    expect(v).toMatchObject({ ok: false, failed: 'nonce' });
    expect(v.message).toMatch(/already used \(replayed quote\)/);
    expect(await checkquote(scratch(), body, { nonce: stub.nonces.issue(VM) })).toBe(false);
    // Replaying the script's own posted initrd body fails the same way.
    expect(verify(initrdBody).message).toMatch(/already used/);
  });

  it('AK attributes: an ak_pub claiming a non-restricted key is rejected before the signature', async () => {
    const body = await fresh();
    const pub = Buffer.from(body.ak_pub, 'base64');
    // TPM2B size (2) + type (2) + nameAlg (2) → objectAttributes at offset 6, big-endian; restricted is bit 16.
    pub.writeUInt32BE(pub.readUInt32BE(6) & ~(1 << 16), 6);
    const v = verify({ ...body, ak_pub: pub.toString('base64') });
    expect(v.failed).toBe('ak');
    expect(v.message).toMatch(/not restricted/);
  });

  it('a ready quote with no pinned AK is rejected', async () => {
    const body = await fresh('ready');
    const v = verify(body, { pinnedAk: null, learn: true });
    expect(v.failed).toBe('ak_pin');
    expect(v.message).toMatch(/before any verified initrd quote/);
  });

  it('a wrong magic is reported as such, before nonce and signature', async () => {
    const body = await fresh();
    const q = Buffer.from(body.quote, 'base64');
    q.writeUInt32BE(0xdeadbeef, 0);
    const v = verify({ ...body, quote: q.toString('base64') });
    expect(v.failed).toBe('attest');
    expect(v.message).toMatch(/not TPM_GENERATED/);
    // The nonce was not consumed by the rejected attempt: the genuine quote still verifies.
    expect(verify(body).ok).toBe(true);
  });

  it('a quote that does not cover the stage PCRs is rejected', async () => {
    const body = await quoteDirect(scratch(), tpm.tcti, 'ready', stub.nonces.issue(VM), INITRD);
    const v = verify(body);
    expect(v.failed).toBe('pcr_digest');
    expect(v.message).toMatch(/does not cover PCR 13/);
  });

  it('golden mismatch names the PCR; the script exits 1 on rejection', async () => {
    const bad = { ...golden, golden: { sha256: { ...golden.golden.sha256, '4': 'ab'.repeat(32) } } };
    const v = verify(await fresh(), { policy: bad });
    expect(v.failed).toBe('golden');
    expect(v.message).toBe(`golden mismatch: pcr 4 expected ${'ab'.repeat(32)}, got ${golden.golden.sha256['4']}`);
    expect(v.mismatches).toEqual([{ pcr: '4', expected: 'ab'.repeat(32), got: golden.golden.sha256['4'] }]);
  });

  it('without golden values and outside learn mode the quote is rejected, naming the PCRs', async () => {
    const v = verify(await fresh(), { policy: newPolicy('test-image', '1') });
    expect(v.failed).toBe('golden');
    expect(v.message).toMatch(/no golden value for pcr 0, 1, 2, 3, 4, 5, 6, 7/);
  });

  it('extending PCR 4 (a changed measurement) turns an accepted quote into a golden mismatch', async () => {
    expect(verify(await fresh()).ok).toBe(true);
    const before = golden.golden.sha256['4']!;
    const measurement = createHash('sha256').update('another kernel').digest('hex');
    await pcrExtend(tpm.tcti, 4, measurement);
    const after = createHash('sha256').update(Buffer.from(before, 'hex')).update(Buffer.from(measurement, 'hex')).digest('hex');
    const body = await fresh();
    const v = verify(body);
    expect(v.failed).toBe('golden');
    expect(v.message).toBe(`golden mismatch: pcr 4 expected ${before}, got ${after}`);
    // tpm2_checkquote checks integrity, not policy: the quote itself is genuine.
    expect(await checkquote(scratch(), body)).toBe(true);
    // The script's own ready run is rejected too, for PCR 4.
    const r = await guest('ready');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/rejected the ready quote/);
    expect(stub.received.at(-1)!.verdict.message).toMatch(/^golden mismatch: pcr 4 expected/);
    // An initrd quote after the ready phase carries the ready phase path in PCR 11.
    const late = await guest('initrd');
    expect(late.code).toBe(1);
    expect(stub.received.at(-1)!.verdict.message).toMatch(/^phase mismatch: pcr 11 expected/);
  });

  it('an RSA-2048 AK (RSASSA) is accepted by both too', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const run = promisify(execFile);
    const d = scratch();
    const env = { ...process.env, TPM2TOOLS_TCTI: other.tcti };
    const { mkdirSync } = await import('node:fs');
    mkdirSync(d, { recursive: true });
    const flush = () => run('tpm2_flushcontext', ['-t'], { env });
    await run('tpm2_createek', ['-c', join(d, 'ek.ctx'), '-G', 'ecc'], { env });
    await run(
      'tpm2_createak',
      ['-C', join(d, 'ek.ctx'), '-c', join(d, 'ak.ctx'), '-G', 'rsa', '-g', 'sha256', '-s', 'rsassa', '-u', join(d, 'ak.pub')],
      { env },
    );
    await flush();
    await run('tpm2_evictcontrol', ['-C', 'o', '-c', join(d, 'ak.ctx'), '0x81010003'], { env });
    await flush();
    const { readFileSync } = await import('node:fs');
    const b = (f: string) => readFileSync(join(d, f)).toString('base64');
    const rsaQuote = async (): Promise<WireBody> => {
      const nonce = stub.nonces.issue(VM);
      await run(
        'tpm2_quote',
        [
          '-c',
          '0x81010003',
          '-l',
          `sha256:${INITRD}`,
          '-q',
          nonce,
          '-g',
          'sha256',
          '-m',
          join(d, 'q.msg'),
          '-s',
          join(d, 'q.sig'),
          '-o',
          join(d, 'q.pcrs'),
          '-F',
          'values',
        ],
        { env },
      );
      return { stage: 'initrd', nonce, pcr_list: INITRD, ak_pub: b('ak.pub'), quote: b('q.msg'), signature: b('q.sig'), pcrs: b('q.pcrs') };
    };
    const body = await rsaQuote();
    expect(Buffer.from(body.ak_pub, 'base64').readUInt16BE(2)).toBe(0x0001); // TPM_ALG_RSA
    const v = verify(body, { pinnedAk: null });
    expect(v.message).toBe('initrd quote verified');
    expect(await checkquote(scratch(), body)).toBe(true);
    const flip = (w: WireBody): WireBody => {
      const sig = Buffer.from(w.signature, 'base64');
      sig[100]! ^= 1;
      return { ...w, signature: sig.toString('base64') };
    };
    const tampered = flip(await rsaQuote());
    expect(verify(tampered, { pinnedAk: null }).failed).toBe('signature');
    expect(await checkquote(scratch(), tampered)).toBe(false);
  });

  it('a malformed body is a body failure (HTTP 400 from the stub), not a crash', async () => {
    expect(verify(null).failed).toBe('body');
    expect(verify({ stage: 'initrd' }).message).toMatch(/^invalid quote body: nonce/);
    const body = await fresh();
    expect(verify({ ...body, extra: 1 }).failed).toBe('body');
    expect(verify({ ...body, quote: 'not base64!' }).failed).toBe('body');
    expect(verify({ ...body, quote: Buffer.from('short').toString('base64') }).failed).toBe('attest');
  });

  it('the script reports an unreachable metadata service and bad usage with their own exit codes', async () => {
    const usage = await runGuestQuote(['boot', '127.0.0.1', '1'], { bin, tcti: tpm.tcti, stateDir });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/stage must be initrd or ready/);
    const down = await runGuestQuote(['initrd', '127.0.0.1', '1'], { bin, tcti: tpm.tcti, stateDir });
    expect(down.code).toBe(4);
    expect(down.stderr).toMatch(/metadata service/);
    // A service that accepts the connection and never answers: bounded by ATTEST_HTTP_TIMEOUT.
    const { createServer } = await import('node:net');
    const held: import('node:net').Socket[] = [];
    const silent = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as import('node:net').AddressInfo).port;
    const t0 = Date.now();
    const hung = await runGuestQuote(['initrd', '127.0.0.1', String(port)], {
      bin,
      tcti: tpm.tcti,
      stateDir,
      extra: { ATTEST_HTTP_TIMEOUT: '1' },
    });
    expect(hung.code).toBe(4);
    expect(hung.stderr).toMatch(/no answer from the metadata service at 127\.0\.0\.1:\d+ within 1 s/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    held.forEach((s) => s.destroy());
    await new Promise((r) => silent.close(r));
    const badList = await runGuestQuote(['initrd', '127.0.0.1', '1'], { bin, tcti: tpm.tcti, stateDir, extra: { ATTEST_PCRS: '0,,1' } });
    expect(badList.code).toBe(2);
  });
});
