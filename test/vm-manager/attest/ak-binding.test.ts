/**
 * Issue 10 item 1 without a VM: the AK is provisioned in the swtpm by the manager's code
 * (attest/provision.ts) and pinned; guest-quote.sh only uses it. A quote from a Node-generated
 * P-256 key carrying every TPM attribute bit and the golden PCR values is refused by the verifier
 * ("AK is not this VM's TPM key") and by tpm2_checkquote against the pinned key; the genuine quote
 * passes both. A TPM without the provisioned AK makes the script fail instead of making a key.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { akFingerprintOf } from '../../../main/vm-manager/attest/provision';
import { expectedPcr11, newPolicy, type ImagePolicy } from '../../../main/vm-manager/attest/policy';
import { needs } from '../../support/system';
import { forgeQuote } from './forge';
import {
  SYSTEM_NEEDS,
  checkquote,
  cleanup,
  guestPath,
  runGuestQuote,
  startMetadataStub,
  startSwtpm,
  tempDir,
  type MetadataStub,
  type Swtpm,
  type WireBody,
} from './harness';

const skip = needs(SYSTEM_NEEDS);
const VM = 'ab12cd34';
const ZERO = '00'.repeat(32);

describe.skipIf(skip !== null)("the AK is bound to the VM's own swtpm", () => {
  let root: string;
  let tpm: Swtpm;
  let bare: Swtpm;
  let bin: string;
  let stub: MetadataStub;
  let n = 0;
  // A bare swtpm's PCRs 0-7 are zero: those are the golden values both quotes carry.
  const policy: ImagePolicy = {
    ...newPolicy('bind', '1'),
    golden: { sha256: Object.fromEntries([0, 1, 2, 3, 4, 5, 6, 7].map((p) => [String(p), ZERO])) },
  };

  beforeAll(async () => {
    root = tempDir('akbind');
    tpm = await startSwtpm(root, 'tpm');
    bare = await startSwtpm(root, 'bare', { provision: false });
    bin = await guestPath(root);
    stub = await startMetadataStub({ vmId: VM, pinnedAk: tpm.ak.fingerprint, policy, learn: false });
  });
  afterAll(async () => {
    await stub?.close();
    await tpm?.stop();
    await bare?.stop();
    if (root) cleanup(root);
  });

  it('the provisioned AK is what the TPM holds at 0x81010002', () => {
    expect(tpm.ak.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(akFingerprintOf(tpm.ak.pub)).toBe(tpm.ak.fingerprint);
  });

  it('the real guest script verifies with the pinned AK, and tpm2_checkquote agrees', async () => {
    const r = await runGuestQuote(['initrd', '127.0.0.1', String(stub.port)], { bin, tcti: tpm.tcti, stateDir: join(root, 'g1') });
    expect(r.code, r.stderr).toBe(0);
    const got = stub.received.at(-1)!;
    expect(got.verdict).toMatchObject({ ok: true, akFingerprint: tpm.ak.fingerprint });
    expect(await checkquote(join(root, `c${n++}`), got.body as WireBody, { akPub: tpm.ak.pub.toString('base64') })).toBe(true);
  });

  it('a Node-made P-256 key with TPM attribute bits and golden PCRs is refused by both', async () => {
    const nonce = stub.nonces.issue(VM);
    const pcrs: Record<number, string> = { 11: expectedPcr11('initrd') };
    for (const p of [0, 1, 2, 3, 4, 5, 6, 7]) pcrs[p] = ZERO;
    const forged = forgeQuote('initrd', nonce, pcrs);
    const res = await fetch(`http://127.0.0.1:${stub.port}/attest/quote`, { method: 'POST', body: JSON.stringify(forged.body) });
    expect(res.status).toBe(403);
    const v = stub.received.at(-1)!.verdict;
    expect(v.failed).toBe('ak_pin');
    expect(v.message).toMatch(/^AK is not this VM's TPM key/);
    // Everything before the pin passed: the forgery is structurally perfect.
    expect(v.pcrs['11']).toBe(expectedPcr11('initrd'));
    // checkquote accepts it only against the forger's own key, never against the VM's.
    const dir = join(root, `c${n++}`);
    expect(await checkquote(dir, forged.body)).toBe(true);
    expect(await checkquote(join(root, `c${n++}`), forged.body, { akPub: tpm.ak.pub.toString('base64') })).toBe(false);
  });

  it('a TPM without the provisioned AK: the script fails and makes no key of its own', async () => {
    const r = await runGuestQuote(['initrd', '127.0.0.1', String(stub.port)], { bin, tcti: bare.tcti, stateDir: join(root, 'g2') });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/no attestation key at 0x81010002: the vm-manager provisions it/);
  });
});
