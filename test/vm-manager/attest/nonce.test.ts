import { describe, expect, it } from 'vitest';
import { NonceStore, NONCE_TTL_MS } from '../../../main/vm-manager/attest/nonce';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('NonceStore', () => {
  it('issues 32 random bytes as lower-case hex, different each time', () => {
    const s = new NonceStore();
    const a = s.issue('vm-a');
    const b = s.issue('vm-a');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });

  it('is single use: the second consume is a replay', () => {
    const s = new NonceStore();
    const n = s.issue('vm-a');
    expect(s.consume('vm-a', n)).toEqual({ ok: true });
    const again = s.consume('vm-a', n);
    expect(again).toMatchObject({ ok: false, reason: 'used' });
  });

  it('is bound to the VM it was issued to', () => {
    const s = new NonceStore();
    const n = s.issue('vm-a');
    expect(s.consume('vm-b', n)).toMatchObject({ ok: false, reason: 'other_vm' });
    // The failed attempt by another VM does not burn it for its owner.
    expect(s.consume('vm-a', n)).toEqual({ ok: true });
  });

  it('expires after 5 minutes (reported as expired, not unknown, for a while)', () => {
    const c = clock();
    const s = new NonceStore(c.now);
    const n = s.issue('vm-a');
    const m = s.issue('vm-a');
    c.advance(NONCE_TTL_MS);
    expect(s.consume('vm-a', n)).toEqual({ ok: true }); // exactly at the limit: still valid
    c.advance(1);
    s.issue('vm-b'); // triggers pruning, which keeps expired entries for another TTL
    const late = s.consume('vm-a', m);
    expect(late).toMatchObject({ ok: false, reason: 'expired' });
    c.advance(NONCE_TTL_MS + 1);
    s.issue('vm-b');
    expect(s.consume('vm-a', m)).toMatchObject({ ok: false, reason: 'unknown' });
  });

  it('keeps at most 8 outstanding per VM, dropping the oldest', () => {
    const c = clock();
    const s = new NonceStore(c.now);
    const issued: string[] = [];
    for (let i = 0; i < 10; i++) {
      issued.push(s.issue('vm-a'));
      c.advance(1);
    }
    s.issue('vm-b');
    expect(s.outstanding('vm-a')).toBe(8);
    expect(s.outstanding('vm-b')).toBe(1);
    expect(s.consume('vm-a', issued[0]!)).toMatchObject({ reason: 'unknown' });
    expect(s.consume('vm-a', issued[1]!)).toMatchObject({ reason: 'unknown' });
    expect(s.consume('vm-a', issued[2]!)).toEqual({ ok: true });
    expect(s.consume('vm-a', issued[9]!)).toEqual({ ok: true });
    expect(s.outstanding('vm-a')).toBe(6);
  });

  it('expired nonces do not count as outstanding', () => {
    const c = clock();
    const s = new NonceStore(c.now);
    for (let i = 0; i < 8; i++) s.issue('vm-a');
    c.advance(NONCE_TTL_MS + 1);
    expect(s.outstanding('vm-a')).toBe(0);
    const n = s.issue('vm-a');
    expect(s.consume('vm-a', n)).toEqual({ ok: true });
  });

  it('forget drops every nonce of a VM', () => {
    const s = new NonceStore();
    const n = s.issue('vm-a');
    const o = s.issue('vm-b');
    s.forget('vm-a');
    expect(s.consume('vm-a', n)).toMatchObject({ reason: 'unknown' });
    expect(s.consume('vm-b', o)).toEqual({ ok: true });
  });

  it('messages say what to do', () => {
    const s = new NonceStore();
    const r = s.consume('vm-a', 'cd'.repeat(32));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/fetch a fresh one from \/attest\/nonce/);
    expect(() => s.issue('')).toThrow(/VM id/);
  });
});
