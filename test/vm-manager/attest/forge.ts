/**
 * The attack of issue 10 item 1: a quote body made entirely in software. A Node-generated P-256
 * key dressed as a TPM AK (fixedTPM, fixedParent, sensitiveDataOrigin, restricted, sign), a
 * TPMS_ATTEST with TPM_GENERATED magic over chosen PCR values and the fetched nonce, signed with
 * that key. Every structural check passes; only the key's binding to the VM's swtpm can refuse it.
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { OBJ, TPM_ALG, TPM_ECC_NIST_P256, TPM_GENERATED_VALUE, TPM_ST_ATTEST_QUOTE } from '../../../main/vm-manager/attest/tpm';

const u16 = (v: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
};
const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};
const sized = (b: Buffer) => Buffer.concat([u16(b.length), b]);

export interface ForgedQuote {
  body: { stage: 'initrd' | 'ready'; nonce: string; pcr_list: string; ak_pub: string; quote: string; signature: string; pcrs: string };
  akFingerprint: string;
}

/** pcrs: PCR number → 64-hex value; every listed PCR is quoted in ascending order. */
export function forgeQuote(stage: 'initrd' | 'ready', nonce: string, pcrs: Record<number, string>): ForgedQuote {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  const attrs = OBJ.fixedTPM | OBJ.fixedParent | OBJ.sensitiveDataOrigin | OBJ.userWithAuth | OBJ.restricted | OBJ.sign;
  const tpmtPublic = Buffer.concat([
    u16(TPM_ALG.ECC),
    u16(TPM_ALG.SHA256),
    u32(attrs),
    sized(Buffer.alloc(0)),
    u16(TPM_ALG.NULL),
    u16(TPM_ALG.ECDSA),
    u16(TPM_ALG.SHA256),
    u16(TPM_ECC_NIST_P256),
    u16(TPM_ALG.NULL),
    sized(x),
    sized(y),
  ]);
  const list = Object.keys(pcrs)
    .map(Number)
    .sort((a, b) => a - b);
  const values = Buffer.concat(list.map((p) => Buffer.from(pcrs[p]!, 'hex')));
  const bitmap = Buffer.alloc(3);
  for (const p of list) bitmap[p >> 3]! |= 1 << (p & 7);
  const attest = Buffer.concat([
    u32(TPM_GENERATED_VALUE),
    u16(TPM_ST_ATTEST_QUOTE),
    sized(Buffer.alloc(0)),
    sized(Buffer.from(nonce, 'hex')),
    Buffer.alloc(8, 1),
    u32(1),
    u32(0),
    Buffer.from([1]),
    Buffer.alloc(8),
    u32(1),
    u16(TPM_ALG.SHA256),
    Buffer.from([3]),
    bitmap,
    sized(createHash('sha256').update(values).digest()),
  ]);
  const sig = sign('sha256', attest, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  const signature = Buffer.concat([u16(TPM_ALG.ECDSA), u16(TPM_ALG.SHA256), sized(sig.subarray(0, 32)), sized(sig.subarray(32))]);
  return {
    body: {
      stage,
      nonce,
      pcr_list: list.join(','),
      ak_pub: sized(tpmtPublic).toString('base64'),
      quote: attest.toString('base64'),
      signature: signature.toString('base64'),
      pcrs: values.toString('base64'),
    },
    akFingerprint: createHash('sha256').update(tpmtPublic).digest('hex'),
  };
}
