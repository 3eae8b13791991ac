import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import { vmAttestation, vmRecord } from '../../shared/contract/vm';
import { toAppError } from '../../main/services/vm/errors';
import { attestationView, managerAttestation, managerImage, managerVm, parseAnswer, vmView } from '../../main/services/vm/views';
import { VmmError } from '../../main/vm-manager/errors';

const H = (c: string) => c.repeat(64);

describe('manager errors become AppErrors with the message kept', () => {
  it.each([
    ['invalid_request', 'invalid_request'],
    ['not_found', 'not_found'],
    ['conflict', 'conflict'],
    ['unauthorized', 'unauthorized'],
    ['timeout', 'timeout'],
    ['unsupported', 'unsupported'],
    ['vm_failed', 'unavailable'],
    ['internal', 'internal'],
    ['something_new', 'internal'],
  ])('%s → %s', (from, to) => {
    const e = toAppError(new VmmError(from as never, `VM abc is stopped; start works only from stopped`), 'POST /vms/abc/start');
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe(to);
    expect(e.message).toBe('VM abc is stopped; start works only from stopped');
  });

  it('an error without a code names the call', () => {
    expect(toAppError(new Error('boom'), 'GET /host').message).toBe('GET /host: boom');
  });
});

describe('views', () => {
  it('refuses a manager answer without the fields the app needs, naming the field', () => {
    expect(() => parseAnswer('GET /vms/x', managerVm, { id: 'x', name: 'n' })).toThrow(/GET \/vms\/x.*image/);
  });

  it('turns a manager VM record into the contract record', () => {
    const v = parseAnswer('GET', managerVm, {
      id: 'deadbeef', name: 'n', image: 'povdesk-test', cpus: 1, memoryMiB: 512, diskGiB: 1, requireAttestation: true, accel: 'tcg',
      state: 'attesting', createdAt: 't0', startedAt: 't1', bootedAt: null, readyAt: null,
      durations: { installSeconds: 0.2, bootSeconds: null, readySeconds: null }, lastError: null,
      attestation: { required: true, userDataReleased: false, nonceIssuedAt: 't2', akFingerprint: null, initrd: { verified: false, message: 'golden mismatch', at: 't3', failed: 'golden', pcrs: {}, mismatches: [] }, ready: null },
      paths: { console: '/x/console.log' }, extra: 'ignored',
    });
    const r = vmRecord.parse(vmView(v));
    expect(r.memoryMib).toBe(512);
    expect(r.attestation).toEqual({ required: true, userDataReleased: false, initrdVerified: false, readyVerified: null });
  });

  it('builds the PCR table: golden match, mismatch, computed, record-only, no golden yet', () => {
    const att = parseAnswer('GET att', managerAttestation, {
      id: 'deadbeef', image: 'img', required: true, userDataReleased: false, nonceIssuedAt: null, akFingerprint: null,
      initrd: {
        verified: false, message: 'golden mismatch: pcr 4', at: 't', failed: 'golden',
        pcrs: { '0': H('a'), '1': H('1'), '4': H('b'), '7': H('c'), '11': H('d') },
        mismatches: [{ pcr: '4', expected: H('e'), got: H('b') }],
      },
      ready: null,
      table: [],
    });
    const image = parseAnswer('GET images', managerImage, { name: 'img', kind: 'kernel', createdAt: null, sizeBytes: 1, policy: { recordOnly: [1], golden: { '0': H('a'), '4': H('e') } } });
    const view = vmAttestation.parse(attestationView(att, image));
    const rows = Object.fromEntries(view.stages[0]!.pcrs.map((p) => [p.index, p]));
    expect(rows[0]).toMatchObject({ match: true, golden: H('a') });
    expect(rows[4]).toMatchObject({ match: false, golden: H('e'), value: H('b') });
    expect(rows[1]).toMatchObject({ match: null, note: expect.stringContaining('record only') });
    expect(rows[11]).toMatchObject({ match: null, golden: null, note: expect.stringContaining('computed') });
    expect(rows[7]).toMatchObject({ match: null, golden: null, note: expect.stringContaining('no golden') });
    expect(view.policyKnown).toBe(true);
  });
});
