import { describe, expect, it } from 'vitest';
import { parseAttest, parsePublic, parseSignature, TpmParseError } from '../../../main/vm-manager/attest/tpm';

/** A TPMS_ATTEST quote as tpm2_quote wrote it on swtpm (PCRs 0-7,11 selected). */
const QUOTE_HEX =
  'ff54434780180022000bfc5b11a21f993c289aa469419ff88a6e368cdbfe153ee8a3d74faf87cc8ba5fe0020' +
  '2d1a08622a7356b308bed866a89ab6a25bb9a34a6ac10a943680bb732009cde4000000000000434900000001' +
  '0000000001201910230016363600000001000b03ff080000202d5565fb483d8ea4525a7a9229677d1038ad34' +
  'b6e22c8d5152e1d7f7b9817597';

describe('TPM structure parsers', () => {
  it('parses a real TPMS_ATTEST quote', () => {
    const a = parseAttest(Buffer.from(QUOTE_HEX, 'hex'));
    expect(a.magic).toBe(0xff544347);
    expect(a.type).toBe(0x8018);
    expect(a.extraData.toString('hex')).toBe('2d1a08622a7356b308bed866a89ab6a25bb9a34a6ac10a943680bb732009cde4');
    expect(a.pcrSelect).toEqual([{ hash: 0x000b, pcrs: [0, 1, 2, 3, 4, 5, 6, 7, 11] }]);
    expect(a.pcrDigest.toString('hex')).toBe('2d5565fb483d8ea4525a7a9229677d1038ad34b6e22c8d5152e1d7f7b9817597');
  });

  it('names the field where input is truncated, and rejects trailing bytes', () => {
    const buf = Buffer.from(QUOTE_HEX, 'hex');
    expect(() => parseAttest(buf.subarray(0, 80))).toThrow(TpmParseError);
    expect(() => parseAttest(buf.subarray(0, 80))).toThrow(/TPMS_ATTEST: truncated at clockInfo/);
    expect(() => parseAttest(Buffer.concat([buf, Buffer.from([0])]))).toThrow(/1 unexpected trailing bytes/);
  });

  it('rejects a public area that is neither ECC nor RSA, and an unknown signature algorithm', () => {
    const pub = Buffer.from('000a0008000b000500720000', 'hex'); // TPM2B size 10, type KEYEDHASH (8)
    expect(() => parsePublic(pub)).toThrow(/neither ECC nor RSA/);
    expect(() => parseSignature(Buffer.from('0005000b0000', 'hex'))).toThrow(/not ECDSA, RSASSA or RSAPSS/);
  });

  it('bounds sizes instead of trusting them', () => {
    const sig = Buffer.from('0018000bffff', 'hex');
    expect(() => parseSignature(sig)).toThrow(/signatureR size 65535 exceeds 66/);
  });
});
