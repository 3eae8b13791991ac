import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  expectedPcr11,
  expectedPcr13,
  firmwareDigest,
  goldenForSize,
  goldenPcrs,
  hasGolden,
  learnedSizes,
  loadPolicy,
  newPolicy,
  recordGolden,
  recordGoldenForSize,
  savePolicy,
} from '../../../main/vm-manager/attest/policy';
import { AppError } from '../../../shared/contract/errors';
import { cleanup, tempDir } from './harness';

const dir = tempDir('policy');
afterAll(() => cleanup(dir));

const h = (s: string) => createHash('sha256').update(s).digest('hex');
const ext = (pcr: string, d: string) => createHash('sha256').update(Buffer.from(pcr, 'hex')).update(Buffer.from(d, 'hex')).digest('hex');

describe('image policy', () => {
  it('round-trips through an atomic save, leaving no temp file', () => {
    const file = join(dir, 'policy.json');
    const p = recordGolden(newPolicy('test-image', '2026.12.1'), { '0': 'aa'.repeat(32), '4': 'bb'.repeat(32), '11': 'cc'.repeat(32) });
    savePolicy(file, p);
    expect(loadPolicy(file)).toEqual(p);
    expect(readdirSync(dir)).toEqual(['policy.json']);
    expect(JSON.parse(readFileSync(file, 'utf8')).golden.sha256).toEqual({ '0': 'aa'.repeat(32), '4': 'bb'.repeat(32) });
  });

  it('refuses to save an invalid policy and leaves the old file alone', () => {
    const file = join(dir, 'keep.json');
    savePolicy(file, newPolicy('keep', '1'));
    const bad = { ...newPolicy('keep', '1'), golden: { sha256: { '4': 'XYZ' } } };
    expect(() => savePolicy(file, bad)).toThrow(/refusing to write an invalid attestation policy .*golden\.sha256\.4/);
    expect(loadPolicy(file).golden.sha256).toEqual({});
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('load names the file and the problem', () => {
    const missing = join(dir, 'nope.json');
    try {
      loadPolicy(missing);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).code).toBe('not_found');
      expect((e as AppError).message).toContain(missing);
    }
    const notJson = join(dir, 'broken.json');
    writeFileSync(notJson, '{');
    expect(() => loadPolicy(notJson)).toThrow(/is not JSON/);
    const extra = join(dir, 'extra.json');
    writeFileSync(extra, JSON.stringify({ ...newPolicy('x', '1'), surprise: true }));
    expect(() => loadPolicy(extra)).toThrow(/is invalid: .*surprise/);
    const g11 = join(dir, 'g11.json');
    writeFileSync(g11, JSON.stringify({ ...newPolicy('x', '1'), golden: { sha256: { '11': 'aa'.repeat(32) } } }));
    expect(() => loadPolicy(g11)).toThrow(/PCR 11 is computed by the verifier/);
    const no11 = join(dir, 'no11.json');
    writeFileSync(no11, JSON.stringify({ ...newPolicy('x', '1'), pcrs: { initrd: [0, 4], ready: [0, 4, 11] } }));
    expect(() => loadPolicy(no11)).toThrow(/pcrs\.initrd: must include PCR 11/);
  });

  it('golden comparison skips 11, 13 and record_only', () => {
    const p = { ...newPolicy('x', '1'), record_only: [1, 5] };
    expect(goldenPcrs(p, 'initrd')).toEqual([0, 2, 3, 4, 6, 7]);
    expect(goldenPcrs(p, 'ready')).toEqual([0, 2, 3, 4, 6, 7]);
    const rec = recordGolden(p, { '0': '00'.repeat(32), '1': '11'.repeat(32), '13': '13'.repeat(32) });
    expect(rec.golden.sha256).toEqual({ '0': '00'.repeat(32) });
  });

  it('recordGolden keeps old values unless clear, and replaces changed ones', () => {
    const p = recordGolden(newPolicy('x', '1'), { '0': '00'.repeat(32), '4': '44'.repeat(32) });
    const q = recordGolden(p, { '4': '45'.repeat(32) });
    expect(q.golden.sha256).toEqual({ '0': '00'.repeat(32), '4': '45'.repeat(32) });
    expect(recordGolden(p, { '4': '45'.repeat(32) }, { clear: true }).golden.sha256).toEqual({ '4': '45'.repeat(32) });
    expect(() => recordGolden(p, { '4': 'short' })).toThrow();
  });

  it('golden values per VM size: the default size in golden, others in golden_sizes; a size without its own uses the default', () => {
    const base = recordGolden(newPolicy('x', '1'), { '0': '00'.repeat(32), '4': '44'.repeat(32) });
    const p = recordGoldenForSize(
      base,
      { cpus: 2, memoryMiB: 1024 },
      { '0': '01'.repeat(32), '4': '45'.repeat(32), '11': 'cc'.repeat(32) },
    );
    expect(p.golden).toEqual(base.golden); // the default size's values are untouched
    expect(p.golden_sizes).toEqual({ '2x1024': { sha256: { '0': '01'.repeat(32), '4': '45'.repeat(32) } } }); // 11 is never golden
    expect(goldenForSize(p, { cpus: 2, memoryMiB: 1024 })).toEqual({
      sha256: { '0': '01'.repeat(32), '4': '45'.repeat(32) },
      atSize: true,
    });
    expect(goldenForSize(p, { cpus: 2, memoryMiB: 2048 })).toEqual({ sha256: base.golden.sha256, atSize: true });
    expect(goldenForSize(p, { cpus: 1, memoryMiB: 2048 })).toEqual({ sha256: base.golden.sha256, atSize: false });
    expect(learnedSizes(p)).toEqual([{ cpus: 2, memoryMiB: 1024 }]);
    // the default size through recordGoldenForSize replaces golden, and keeps the other sizes
    const q = recordGoldenForSize(p, { cpus: 2, memoryMiB: 2048 }, { '0': '02'.repeat(32) });
    expect(q.golden.sha256).toEqual({ '0': '02'.repeat(32) });
    expect(q.golden_sizes).toEqual(p.golden_sizes);
    expect(hasGolden(newPolicy('x', '1'))).toBe(false);
    expect(hasGolden({ ...newPolicy('x', '1'), golden_sizes: p.golden_sizes })).toBe(true);
  });

  it('golden_sizes: refuses a malformed size, the default size, and computed PCRs in a size', () => {
    const write = (name: string, golden_sizes: unknown) => {
      const f = join(dir, `${name}.json`);
      writeFileSync(f, JSON.stringify({ ...newPolicy('x', '1'), golden_sizes }));
      return f;
    };
    expect(() => loadPolicy(write('gs-key', { '2-1024': { sha256: {} } }))).toThrow(
      /golden_sizes\.2-1024: not a VM size "<cpus>x<memory MiB>"/,
    );
    expect(() => loadPolicy(write('gs-zero', { '0x1024': { sha256: {} } }))).toThrow(/golden_sizes\.0x1024: not a VM size/);
    expect(() => loadPolicy(write('gs-default', { '2x2048': { sha256: {} } }))).toThrow(
      /2x2048 is the default size: its values belong in golden\.sha256/,
    );
    expect(() => loadPolicy(write('gs-13', { '2x1024': { sha256: { '13': 'aa'.repeat(32) } } }))).toThrow(
      /PCR 13 is computed by the verifier/,
    );
    expect(() => loadPolicy(write('gs-hex', { '2x1024': { sha256: { '4': 'short' } } }))).toThrow(/sha256 digest/);
    expect(loadPolicy(write('gs-ok', { '1x512': { sha256: { '4': 'aa'.repeat(32) } } })).golden_sizes).toEqual({
      '1x512': { sha256: { '4': 'aa'.repeat(32) } },
    });
  });

  it('PCR 11 and 13 follow the documented extend chains', () => {
    const zero = '00'.repeat(32);
    expect(expectedPcr11('initrd')).toBe(ext(zero, h('enter-initrd')));
    expect(expectedPcr11('ready')).toBe(ext(ext(ext(ext(zero, h('enter-initrd')), h('leave-initrd')), h('sysinit')), h('ready')));
    expect(expectedPcr13(null)).toBe(zero);
    expect(expectedPcr13('')).toBe(zero);
    expect(expectedPcr13('ud')).toBe(ext(zero, h('ud')));
  });

  it('firmwareDigest hashes the file', () => {
    const f = join(dir, 'fw.fd');
    writeFileSync(f, 'firmware');
    expect(firmwareDigest(f)).toBe(h('firmware'));
  });
});
