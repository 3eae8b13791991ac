import { randomBytes } from 'node:crypto';

export const NONCE_TTL_MS = 5 * 60 * 1000;
export const MAX_OUTSTANDING_PER_VM = 8;

export type NonceCheck = { ok: true } | { ok: false; reason: 'unknown' | 'expired' | 'used' | 'other_vm'; message: string };

interface Entry {
  vmId: string;
  issuedAt: number;
  used: boolean;
}

/**
 * Attestation nonces: 32 random bytes as lower-case hex, single use, valid NONCE_TTL_MS, bound to
 * the VM that asked. At most MAX_OUTSTANDING_PER_VM unused ones per VM: issuing another drops that
 * VM's oldest (a guest that retries after a lost answer is never locked out, and memory stays
 * bounded). Used and expired nonces are remembered for another TTL, so a replay is reported as
 * a replay rather than as an unknown nonce. In memory only: a manager restart invalidates every
 * outstanding nonce, and the guest simply asks again.
 */
export class NonceStore {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = NONCE_TTL_MS,
    private readonly maxPerVm = MAX_OUTSTANDING_PER_VM,
  ) {}

  issue(vmId: string): string {
    if (!vmId) throw new Error('NonceStore.issue needs a VM id');
    this.prune();
    const t = this.now();
    const mine = [...this.entries].filter(([, e]) => e.vmId === vmId && !e.used && t - e.issuedAt <= this.ttlMs);
    mine.sort((a, b) => a[1].issuedAt - b[1].issuedAt);
    while (mine.length >= this.maxPerVm) this.entries.delete(mine.shift()![0]);
    const nonce = randomBytes(32).toString('hex');
    this.entries.set(nonce, { vmId, issuedAt: this.now(), used: false });
    return nonce;
  }

  /** Checks and, when valid, consumes the nonce (a second consume of it fails as 'used'). */
  consume(vmId: string, nonce: string): NonceCheck {
    const key = nonce.toLowerCase();
    const e = this.entries.get(key);
    const short = key.slice(0, 16);
    if (!e) {
      return {
        ok: false,
        reason: 'unknown',
        message: `nonce ${short}… was never issued (or was dropped by a restart or by newer nonces); fetch a fresh one from /attest/nonce`,
      };
    }
    if (e.vmId !== vmId) {
      return { ok: false, reason: 'other_vm', message: `nonce ${short}… was issued to another VM, not to ${vmId}` };
    }
    if (e.used) {
      return {
        ok: false,
        reason: 'used',
        message: `nonce ${short}… was already used (replayed quote); fetch a fresh one from /attest/nonce`,
      };
    }
    if (this.now() - e.issuedAt > this.ttlMs) {
      return {
        ok: false,
        reason: 'expired',
        message: `nonce ${short}… expired (older than ${Math.round(this.ttlMs / 1000)} s); fetch a fresh one from /attest/nonce`,
      };
    }
    e.used = true;
    return { ok: true };
  }

  /** Unused, unexpired nonces of one VM. */
  outstanding(vmId: string): number {
    this.prune();
    let n = 0;
    const t = this.now();
    for (const e of this.entries.values()) if (e.vmId === vmId && !e.used && t - e.issuedAt <= this.ttlMs) n++;
    return n;
  }

  /** Drops every nonce of a VM (on delete, or when its boot restarts). */
  forget(vmId: string): void {
    for (const [k, e] of this.entries) if (e.vmId === vmId) this.entries.delete(k);
  }

  /** Entries are kept for a second TTL after expiry so a late quote hears "expired", not "unknown". */
  private prune(): void {
    const t = this.now();
    for (const [k, e] of this.entries) if (t - e.issuedAt > 2 * this.ttlMs) this.entries.delete(k);
  }
}
