import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../shared/contract';
import type { PamStatus } from '../../shared/contract/pam';
import type { PovView } from '../../shared/contract/pov';
import { povReadiness } from '../../shared/contract/readiness';
import type { ShareView } from '../../shared/contract/share';
import { assessReadiness, ReadinessService, type ReadinessFacts } from '../../main/services/pov/readiness';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import { readinessWords } from '../../shared/contract/values';

/** A controllable clock: every test says what time it is. */
const T0 = Date.parse('2026-12-01T08:00:00Z');
const at = (deltaMs: number) => new Date(T0 + deltaMs).toISOString();
const H = 3600_000;

const done = { state: 'done' as const, id: 'x', detail: null, error: null };

function readyFacts(): ReadinessFacts {
  const pov: PovView = {
    id: 'p1',
    name: 'Acme',
    platform: 'skytap',
    templateId: 't',
    templateName: 'T',
    envId: 'e1',
    state: 'active',
    runstate: 'running',
    rateLimited: false,
    errorMessage: null,
    lastConfirmedAt: at(-5 * 60_000),
    envGoneAt: null,
    controlNode: { name: 'cn', vmId: 'v1', status: 'enrolled', reason: null, mode: 'spire', vm: 'cn' },
    createdAt: at(-48 * H),
    updatedAt: at(-H),
    activeJobId: null,
    actions: { start: false, suspend: true, destroy: true, refreshVms: true },
    autoDelete: { at: at(72 * H), status: 'armed', reason: null, scheduleId: 's', nextWarning: null, lastWarning: null },
  };
  const pam = {
    povId: 'p1',
    tenants: {
      povId: 'p1',
      pra: { site: 'https://pra', clientId: 'c', secretSet: true },
      passwordSafe: null,
      entitle: null,
      brokerInstallKeySet: false,
      functionalAccounts: { linux: null, windows: null },
      managedAccounts: { linux: [], windows: [] },
    },
    gateway: { ...done, connected: true, node: 'node-1' },
    jumpGroup: done,
    workgroup: done,
    container: done,
    broker: { ...done, vm: null, label: 'broker: verified' },
    entitle: { ...done, sshIntegration: { enabled: false, reason: '' } },
    vms: [
      {
        vmId: 'v2',
        name: 'web',
        os: 'linux',
        ip: '10.0.0.2',
        jumpItem: { ...done, type: 'shell_jump' as const },
        passwordSafe: done,
        entitle: done,
      },
    ],
    jobId: null,
    lastRun: { op: 'wire' as const, state: 'succeeded', at: at(-2 * H) },
  } satisfies PamStatus;
  const share: ShareView = {
    shareId: 's1',
    name: 'Acme – customer access',
    url: 'https://cloud.skytap.com/vms/abc/desktops',
    access: 'run_and_use',
    vmIds: ['v2'],
    expiresAt: at(72 * H),
    runtimeLimitMinutes: null,
    runtimeLeftSeconds: null,
    managed: true,
    passwordStored: true,
    goneAt: null,
    createdAt: at(-3 * H),
  };
  return { pov, pam, shares: [share], jobs: [job(JOB_KIND.povCreate, 'succeeded', -47 * H)] };
}

function job(kind: string, state: JobRecord['state'], finishedDelta: number, message = 'boom'): JobRecord {
  return {
    id: `${kind}-${finishedDelta}`,
    kind,
    title: `${kind} job`,
    subject: 'p1',
    routine: false,
    state,
    progress: { step: '', fraction: null, message: '' },
    createdAt: at(finishedDelta - 60_000),
    startedAt: at(finishedDelta - 60_000),
    finishedAt: at(finishedDelta),
    error: state === 'failed' ? { code: 'unavailable', message } : null,
    result: null,
  } as JobRecord;
}

const now = new Date(T0);
const item = (f: ReadinessFacts, key: string, when = now) => assessReadiness(f, when).items.find((i) => i.key === key)!;

describe('demo readiness', () => {
  it('is ready when every item holds, and the result matches the contract', () => {
    const r = assessReadiness(readyFacts(), now);
    expect(povReadiness.parse(r)).toEqual(r);
    expect(r.overall).toBe('ready');
    expect(r.summary).toBe('Ready for the customer.');
    expect(r.items.map((i) => [i.key, i.state])).toEqual([
      ['environment', 'ok'],
      ['controlNode', 'ok'],
      ['gateway', 'ok'],
      ['share', 'ok'],
      ['autoDelete', 'ok'],
      ['jobs', 'ok'],
    ]);
    expect(item(readyFacts(), 'environment').ageSeconds).toBe(300);
  });

  it('environment: suspended is not ready (Start); a stale confirmation needs attention (Refresh) as the clock moves', () => {
    const f = readyFacts();
    f.pov.runstate = 'suspended';
    const r = assessReadiness(f, now);
    expect(r.overall).toBe('not_ready');
    expect(r.summary).toMatch(/last confirmed suspended/);
    expect(item(f, 'environment').action).toEqual({ label: 'Start the environment', method: 'pov.start' });

    const g = readyFacts();
    const later = new Date(T0 + 30 * 60_000); // the confirmation is now 35 min old
    expect(assessReadiness(g, later).overall).toBe('attention');
    expect(item(g, 'environment', later)).toMatchObject({ state: 'attention', ageSeconds: 2100, action: { method: 'reconcile.runNow' } });
  });

  it('control node: not enrolled flips the badge, installing asks for attention', () => {
    const f = readyFacts();
    f.pov.controlNode.status = null;
    expect(assessReadiness(f, now).overall).toBe('not_ready');
    expect(item(f, 'controlNode').action?.method).toBe('pov.installControlNode');
    f.pov.controlNode.status = 'installing';
    expect(assessReadiness(f, now).overall).toBe('attention');
    // Settings → Control node incomplete: not configured, neutral, with how to add it
    f.pov.controlNode = { ...f.pov.controlNode, status: 'not_set_up', reason: 'Settings → Control node has no control-plane URL' };
    expect(item(f, 'controlNode')).toMatchObject({ state: 'not_configured', action: { method: 'controlNode.saveSettings' } });
    expect(assessReadiness(f, now).overall).toBe('ready');
    f.pov.controlNode = { ...f.pov.controlNode, status: 'none', reason: 'no control node: 2 Linux VMs and none is named' };
    expect(item(f, 'controlNode')).toMatchObject({ state: 'not_ready', detail: 'no control node: 2 Linux VMs and none is named' });
  });

  it('gateway: no tenant is not configured (neutral); gateway disconnected or one VM unwired is not ready', () => {
    const none = readyFacts();
    none.pam = null;
    expect(item(none, 'gateway').state).toBe('not_configured');
    expect(assessReadiness(none, now)).toMatchObject({
      overall: 'ready',
      summary: 'Ready for the customer (not configured: BeyondTrust).',
    });
    expect(item(none, 'gateway').action).toEqual({
      label: 'To add it: save the tenants in Access (BeyondTrust) on this page',
      method: 'pam.saveTenants',
    });

    const off = readyFacts();
    off.pam!.gateway.connected = false;
    expect(assessReadiness(off, now).overall).toBe('not_ready');
    expect(item(off, 'gateway').action?.method).toBe('pam.wire');

    const vm = readyFacts();
    vm.pam!.vms[0]!.jumpItem = { ...vm.pam!.vms[0]!.jumpItem, state: 'failed', error: 'PRA refused' };
    expect(item(vm, 'gateway')).toMatchObject({ state: 'not_ready', detail: '1 of 1 VM(s) not wired: web.' });

    const busy = readyFacts();
    busy.pam!.jobId = 'j';
    expect(assessReadiness(busy, now).overall).toBe('attention');
  });

  it('share: none is not ready; expiring inside 24 h needs attention; expired is not ready; as long as auto-delete is fine', () => {
    const f = readyFacts();
    f.shares = [];
    expect(assessReadiness(f, now).overall).toBe('not_ready');
    expect(item(f, 'share').action?.method).toBe('share.create');

    const soon = readyFacts();
    soon.shares[0]!.expiresAt = at(5 * H);
    expect(assessReadiness(soon, now).overall).toBe('attention');
    expect(item(soon, 'share').action?.method).toBe('share.extend');
    expect(assessReadiness(soon, new Date(T0 + 6 * H)).items.find((i) => i.key === 'share')!.state).toBe('not_ready');

    const gone = readyFacts();
    gone.shares[0]!.goneAt = at(-H);
    expect(item(gone, 'share').state).toBe('not_ready');

    // A link can never outlive the environment: one lasting until auto-delete is fine for the link.
    const capped = readyFacts();
    capped.shares[0]!.expiresAt = at(30 * H);
    capped.pov.autoDelete!.at = at(30 * H);
    expect(item(capped, 'share').state).toBe('ok');
  });

  it('auto-delete: not armed, unset or within 24 h needs attention; passed is not ready', () => {
    const f = readyFacts();
    f.pov.autoDelete!.status = 'not_armed';
    expect(assessReadiness(f, now).overall).toBe('attention');
    expect(item(f, 'autoDelete').action?.method).toBe('pov.setAutoDelete');

    const unset = readyFacts();
    delete unset.pov.autoDelete;
    expect(item(unset, 'autoDelete').state).toBe('attention');

    const g = readyFacts();
    expect(item(g, 'autoDelete', new Date(T0 + 50 * H)).state).toBe('attention'); // 22 h left
    expect(item(g, 'autoDelete', new Date(T0 + 73 * H)).state).toBe('not_ready');
  });

  it('jobs: a failure since the last success of its kind needs attention; a later success clears it', () => {
    const f = readyFacts();
    f.jobs.push(job('pam.wire', 'failed', -H, 'PRA answered 503'));
    expect(assessReadiness(f, now).overall).toBe('attention');
    expect(item(f, 'jobs')).toMatchObject({ state: 'attention', ageSeconds: 3600 });
    expect(item(f, 'jobs').detail).toMatch(/PRA answered 503/);
    f.jobs.push(job('pam.wire', 'succeeded', -10 * 60_000));
    expect(assessReadiness(f, now).overall).toBe('ready');
    f.jobs.push(job('pam.wire', 'cancelled', -60_000)); // neither failure nor success
    expect(item(f, 'jobs').state).toBe('ok');
  });

  it('the service gathers the facts per POV and puts the badge on list rows', async () => {
    const f = readyFacts();
    const svc = new ReadinessService({
      pov: () => f.pov,
      pam: async () => f.pam,
      shares: () => f.shares,
      jobs: () => f.jobs,
      now: () => new Date(T0 + 50 * H),
    });
    const [row] = await svc.badges([f.pov]);
    expect(row!.readiness?.overall).toBe('attention'); // confirmation stale, auto-delete in 22 h
    expect((await svc.of('p1')).items.filter((i) => i.state !== 'ok').map((i) => i.key)).toEqual(['environment', 'autoDelete']);
  });

  it('a local POV has no share-link or auto-delete item (the platform has neither), and its stale runstate does not blame Skytap', () => {
    const f = readyFacts();
    f.pov.platform = 'local';
    f.pov.autoDelete = undefined;
    f.shares = [];
    const r = assessReadiness(f, now);
    expect(r.items.map((i) => i.key)).toEqual(['environment', 'controlNode', 'gateway', 'jobs']);
    expect(r).toMatchObject({ overall: 'ready', summary: 'Ready to rehearse.' });
    // a rehearsal with neither outside service set up is still ready to rehearse, saying what is not configured
    const bare = structuredClone(f);
    bare.pam = null;
    bare.pov.controlNode = { ...bare.pov.controlNode, status: 'not_set_up', reason: 'Settings → Control node is incomplete' };
    expect(assessReadiness(bare, now)).toMatchObject({
      overall: 'ready',
      summary: 'Ready to rehearse (not configured: control node, BeyondTrust).',
    });
    expect(readinessWords('ready', 'local')).toBe('ready to rehearse');
    expect(readinessWords('ready', 'skytap')).toBe('ready');
    f.pov.lastConfirmedAt = at(-3 * H);
    expect(item(f, 'environment').detail).toBe('Running, but last confirmed 3 h ago: it may have stopped since.');
    // The same facts on Skytap: no link and no auto-delete are findings there.
    f.pov.platform = 'skytap';
    expect(assessReadiness(f, now).items.map((i) => [i.key, i.state])).toContainEqual(['share', 'not_ready']);
  });
});
