/** The pure parts of issue 10's bounds and the firmware check, without a VM (trust.test.ts checks them from a guest). */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { firmwareDigest, newPolicy } from '../../main/vm-manager/attest/index';
import { firmwareChange } from '../../main/vm-manager/golden';
import { capConsole, RateLimiter } from '../../main/vm-manager/guest-limits';

const dir = mkdtempSync(join(tmpdir(), 'vmm-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('guest bounds and the firmware check', () => {
  it('rate limits per VM: a burst, then one per refill period, with the wait in seconds', () => {
    let t = 0;
    const rl = new RateLimiter(3, 5000, () => t);
    expect([rl.take('a'), rl.take('a'), rl.take('a')]).toEqual([0, 0, 0]);
    expect(rl.take('a')).toBe(5);
    expect(rl.take('b')).toBe(0); // another VM has its own bucket
    t += 5000;
    expect(rl.take('a')).toBe(0);
    expect(rl.take('a')).toBeGreaterThan(0);
  });

  it('caps a console log to its newest half, starting at a line, and says so', () => {
    const f = join(dir, 'console.log');
    writeFileSync(f, Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n') + '\n');
    expect(capConsole(f, 4096)).toBe(true);
    const text = readFileSync(f, 'utf8');
    expect(statSync(f).size).toBeLessThanOrEqual(4096);
    expect(text).toMatch(/^\[vm-manager: console\.log over 4096 bytes; \d+ older bytes dropped\]\nline \d+\n/);
    expect(text.endsWith('line 1999\n')).toBe(true);
    expect(capConsole(f, 4096)).toBe(false);
  });

  it('names a firmware change since the golden values were learned', () => {
    const fw = join(dir, 'OVMF_CODE.fd');
    writeFileSync(fw, 'firmware build 1');
    const policy = {
      ...newPolicy('img', '1'),
      golden: { sha256: { '0': 'a'.repeat(64) } },
      golden_firmware: { path: fw, sha256: firmwareDigest(fw) },
    };
    expect(firmwareChange(policy, fw)).toBeNull();
    writeFileSync(fw, 'firmware build 2');
    expect(firmwareChange(policy, fw)).toMatch(/firmware changed since the golden values were learned.*learn them again/);
    expect(firmwareChange({ ...policy, golden: { sha256: {} } }, fw)).toBeNull(); // nothing learned: nothing to be stale
  });
});
