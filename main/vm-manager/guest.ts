/**
 * Guest bookkeeping: what the metadata service learns from a guest (first contact, a nonce, a
 * quote's verdict, READY) written into its record, and waiting for a milestone of a create.
 */
import { VmmError } from './errors';
import { LIVE, now, secondsBetween, type StageResult, type VmRecord, type VmRecords, type WaitFor } from './vm-record';

export class GuestBook {
  constructor(
    private readonly recs: VmRecords,
    private readonly clearBootTimer: (id: string) => void,
  ) {}

  contact(id: string) {
    const r = this.recs.find(id);
    if (!r || r.bootedAt || (r.state !== 'booting' && r.state !== 'attesting' && r.state !== 'running')) return;
    this.recs.update(id, (v) => {
      v.bootedAt = now();
      v.durations.bootSeconds = secondsBetween(v.startedAt, v.bootedAt);
    });
  }

  nonceIssued(id: string) {
    this.contact(id);
    this.recs.update(id, (v) => {
      v.attestation.nonceIssuedAt = now();
      if (v.state === 'booting') v.state = 'attesting';
    });
  }

  recordQuote(id: string, result: StageResult, stage: 'initrd' | 'ready') {
    this.recs.update(id, (v) => {
      v.attestation[stage] = result;
      if (result.verified && stage === 'initrd') v.attestation.userDataReleased = true;
    });
  }

  /** Marks READY. A VM that requires attestation must have had its user-data released first. */
  ready(id: string): boolean {
    const r = this.recs.get(id);
    if (!['booting', 'attesting', 'running'].includes(r.state)) return false;
    if (r.requireAttestation && !r.attestation.userDataReleased) return false;
    this.clearBootTimer(id);
    this.recs.update(id, (v) => {
      v.state = 'ready';
      v.readyAt = now();
      v.booted = true;
      v.durations.readySeconds = secondsBetween(v.startedAt, v.readyAt);
      if (v.lastError?.startsWith('no READY within')) v.lastError = null;
    });
    return true;
  }
}

/** Whether the record has reached the milestone a create waits for. */
export function reached(r: VmRecord, milestone: WaitFor): boolean {
  if (milestone === 'none') return true;
  if (milestone === 'installed') return r.installedAt !== null && (LIVE.includes(r.state) || r.booted);
  if (milestone === 'ready') return r.state === 'ready';
  return r.bootedAt !== null && r.attestation.userDataReleased && (r.attestation.initrd?.verified === true || !r.requireAttestation);
}

/**
 * Resolves when the milestone is reached; `vm_failed` when the VM ends first; `timeout` after ms.
 * Both messages name the VM id, which still exists.
 */
export function waitFor(recs: VmRecords, id: string, milestone: WaitFor, ms: number): Promise<VmRecord> {
  const ended = (r: VmRecord) => r.state === 'failed' || r.state === 'stopped' || r.state === 'deleting';
  // `running`: QEMU is up but READY did not come within the boot timeout, so the milestone was not reached in time.
  const late = (r: VmRecord) => r.state === 'running' && milestone !== 'none' && milestone !== 'installed';
  return new Promise((resolve, reject) => {
    const check = (r: VmRecord) => {
      if (r.id !== id) return;
      if (reached(r, milestone)) finish(() => resolve(r));
      else if (ended(r))
        finish(() =>
          reject(
            new VmmError(
              'vm_failed',
              `VM ${id} is ${r.state} before "${milestone}" (the VM still exists: GET /api/v1/vms/${id}, or delete it): ` +
                (r.lastError ?? 'no error recorded'),
            ),
          ),
        );
      else if (late(r))
        finish(() =>
          reject(
            new VmmError(
              'timeout',
              (
                `VM ${id} did not reach "${milestone}" within the boot timeout; it keeps running (state running): ` +
                `GET /api/v1/vms/${id}. ${r.lastError?.split('\n')[0] ?? ''}`
              ).trim(),
            ),
          ),
        );
    };
    const onDeleted = (d: string) =>
      d === id && finish(() => reject(new VmmError('vm_failed', `VM ${id} was deleted while waiting for "${milestone}"`)));
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new VmmError(
              'timeout',
              `VM ${id} did not reach "${milestone}" within ${Math.round(ms / 1000)} s; it keeps running: GET /api/v1/vms/${id}`,
            ),
          ),
        ),
      ms,
    );
    const finish = (f: () => void) => {
      clearTimeout(timer);
      recs.events.off('change', check);
      recs.events.off('deleted', onDeleted);
      f();
    };
    recs.events.on('change', check);
    recs.events.on('deleted', onDeleted);
    check(recs.get(id));
  });
}
