import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import { vmAttestation, vmHost, vmRecord } from '../../shared/contract/vm';
import { toAppError } from '../../main/services/vm/errors';
import { attestationView, hostView, imageView, vmView } from '../../main/services/vm/views';
import { attestationSchema, vmSchema } from '../../main/vm-api/schemas';
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

const docVm = {
  id: 'deadbeef',
  name: 'n',
  image: 'povdesk-test',
  cpus: 1,
  memoryMiB: 512,
  diskGiB: 1,
  network: 'default',
  requireAttestation: true,
  state: 'attesting',
  cid: 3,
  machineID: '0123456789abcdef0123456789abcdef',
  booted: false,
  sshPublicKey: 'ssh-ed25519 AAAA',
  createdAt: '2026-12-01T10:00:00Z',
  installedAt: '2026-12-01T10:00:02Z',
  attestation: {
    required: true,
    userDataReleased: false,
    nonceIssuedAt: '2026-12-01T10:00:03Z',
    initrd: { verified: false, message: 'golden mismatch', at: '2026-12-01T10:00:04Z' },
  },
  paths: { console: '/x/console.log' },
};

describe('views', () => {
  it("the document's VM record alone is enough: fields it lacks are null, durations come from its timestamps", () => {
    const v = vmSchema.parse(docVm);
    const r = vmRecord.parse(vmView(v));
    expect(r.memoryMib).toBe(512);
    expect(r.attestation).toEqual({ required: true, userDataReleased: false, initrdVerified: false, readyVerified: null });
    expect(r).toMatchObject({ accel: null, startedAt: null, sshPort: null, sshHostKey: null, lastError: null });
    expect(r.durations.installSeconds).toBe(2);
  });

  it("reads the local daemon's extras when they have the right shape, ignores them otherwise", () => {
    const r = vmView({
      ...docVm,
      povdesk: { ports: { ssh: 2222 }, accel: 'tcg', sshHostKey: { publicKey: 'ssh-ed25519 AAAAC3Nz' } },
    } as never);
    expect(r).toMatchObject({ sshPort: 2222, accel: 'tcg', sshHostKey: 'ssh-ed25519 AAAAC3Nz' });
    expect(vmView({ ...docVm, povdesk: { ports: { ssh: 'x' }, accel: 7 } } as never)).toMatchObject({ sshPort: null, accel: null });
    // extras outside povdesk are not the daemon's: ignored
    expect(vmView({ ...docVm, ports: { ssh: 2222 } } as never).sshPort).toBeNull();
  });

  it("host: the document's report (missing as names, kvm device) becomes the page's view", () => {
    const h = hostView(
      {
        hostname: 'h',
        kernel: '6.1',
        cpus: 2,
        memoryBytes: 1 << 30,
        kvm: { path: '/dev/kvm', accessible: false, error: 'permission denied' },
        vhostVsock: { path: '/dev/vhost-vsock', accessible: false },
        qemu: { found: true, version: '8.2' },
        swtpm: { found: false, error: 'not on PATH' },
        systemd: { found: true, version: '255' },
        storageProviders: [],
        ready: false,
        missing: ['swtpm'],
      },
      'https://m',
      'remote',
    );
    expect(vmHost.parse(h)).toMatchObject({
      missing: [{ what: 'swtpm', install: '' }],
      accelerator: { chosen: null, reason: 'permission denied' },
    });
    expect(h.tools.map((t) => t.name)).toEqual(['qemu-system-x86_64', 'swtpm', 'systemd']);
  });

  it('images: the bare id while it is the only version, "<id>_<version>" for older ones', () => {
    const all = [
      { id: 'base', version: '2', uki: '/u2', disk: '/d2' },
      { id: 'base', version: '1', uki: '/u1', disk: '/d1', policy: { golden: { '4': H('a') } } },
    ];
    expect(all.map((i) => imageView(i, all).name)).toEqual(['base', 'base_1']);
    expect(imageView(all[1]!, all)).toMatchObject({ hasPolicy: true, goldenPcrs: 1, kind: 'uki' });
    // a policy.json as an image build writes it (golden.sha256, record_only)
    const built = {
      id: 'b',
      version: '1',
      uki: '/u',
      disk: '/d',
      policy: { golden: { sha256: { '0': H('a'), '7': H('b') } }, record_only: [1] },
    };
    expect(imageView(built)).toMatchObject({ hasPolicy: true, goldenPcrs: 2 });
  });

  it('builds the PCR table: golden match, mismatch, computed, record-only, no golden yet', () => {
    const att = attestationSchema.parse({
      required: true,
      userDataReleased: false,
      initrd: { verified: false, message: 'golden mismatch: pcr 4', at: '2026-12-01T10:00:00Z' },
    });
    const raw = {
      ...att,
      povdesk: {
        initrd: {
          ...att.initrd!,
          failed: 'golden',
          pcrs: { '0': H('a'), '1': H('1'), '4': H('b'), '7': H('c'), '11': H('d') },
          mismatches: [{ pcr: '4', expected: H('e'), got: H('b') }],
        },
      },
    };
    const view = vmAttestation.parse(
      attestationView('deadbeef', raw, {
        recordOnly: [1],
        golden: { '0': H('a'), '4': H('e') },
        firmwareChanged: null,
        goldenSizes: [],
        references: null,
        unpredictable: null,
      }),
    );
    const rows = Object.fromEntries(view.stages[0]!.pcrs.map((p) => [p.index, p]));
    expect(rows[0]).toMatchObject({ match: true, golden: H('a') });
    expect(rows[4]).toMatchObject({ match: false, golden: H('e'), value: H('b') });
    expect(rows[1]).toMatchObject({ match: null, note: expect.stringContaining('record only') });
    expect(rows[11]).toMatchObject({ match: null, golden: null, note: expect.stringContaining('computed') });
    expect(rows[7]).toMatchObject({ match: null, golden: null, note: expect.stringContaining('no golden') });
    expect(view.policyKnown).toBe(true);
    // the document's Quote alone: the verdict, no table
    expect(attestationView('deadbeef', att, null).stages[0]).toMatchObject({ verified: false, pcrs: [], failed: null });
  });
});
