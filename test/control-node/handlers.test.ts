import { afterEach, describe, expect, it } from 'vitest';
import { controlNodeMethods } from '../../shared/contract/control-node';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { BEGIN_MARKER } from '../../main/services/control-node/markers';
import { runnerScript } from '../../main/services/control-node/runner';
import { coreWorld, type CoreWorld } from '../pov/helpers';
import { guest } from './harness';
import { povMethods } from '../../shared/contract/pov';
import { bakeMethods } from '../../shared/contract/bake';

/**
 * The methods through the real core's Dispatcher (args and results through the contract schemas), with
 * real SQLite, the Skytap emulator over HTTP and the control-plane double over HTTP. A "guest"
 * loop reads the VM's user_data from the emulator and enrols the agent it names, as the template
 * runner plus the agent would.
 */
let w: CoreWorld;
let cp: ControlPlaneDouble;
let stopGuest = () => {};
afterEach(async () => {
  stopGuest();
  await cp?.stop();
  await w?.close();
});

describe('control-node handlers through the contract', () => {
  it('bake.runnerScript returns the runner, its sha256, unit and per-line sums', async () => {
    w = await coreWorld({ noSkytap: true });
    cp = await new ControlPlaneDouble().start();
    const r = await w.call('bake.runnerScript', {});
    expect(r.sha256).toBe(runnerScript().sha256);
    expect(r.path).toBe('/usr/local/sbin/dashboard-bootstrap-runner');
    expect(r.lines.length).toBe(r.script.trimEnd().split('\n').length);
    expect(r.unit).toContain('Restart=always');
  });

  it(
    'provision refuses two Linux VMs with the candidates on the row; name VM re-resolves; Install control node enrols and clears ' +
      'user_data',
    async () => {
      w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' }, tuning: { controlNode: { enrolPollMs: 30 } } });
      cp = await new ControlPlaneDouble().start();
      await w.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
      expect(await w.call('controlNode.getSettings', {})).toMatchObject({ tokenSet: true, controlPlaneUrl: cp.url, spireEnabled: false });

      const tpl = [...w.emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
      const created = await w.call('pov.create', { templateId: tpl.id, name: 'CN POV' });
      const job = await w.jobs.wait(created.jobId);
      expect(job.state, JSON.stringify(job.error)).toBe('succeeded'); // the refusal never fails the provision
      const povId = (await w.call('pov.list', {})).povs[0]!.id;
      let pov = (await w.call('pov.get', { id: povId })).pov;
      expect(pov.state).toBe('active');
      expect(pov.errorMessage).toBeNull();
      expect(pov.controlNode.reason).toMatch(/2 Linux VMs.*candidates: control-node, rhel-target/);
      expect(cp.agents.size).toBe(0);

      await expect(w.call('controlNode.previewBootstrap', { povId })).rejects.toMatchObject({ code: 'conflict' });
      const named = await w.call('pov.setControlNodeName', { id: povId, name: 'CONTROL-NODE' });
      expect(named.controlNode).toMatchObject({ name: 'CONTROL-NODE', resolvedVm: 'control-node', status: null, reason: null });
      const preview = await w.call('controlNode.previewBootstrap', { povId });
      expect(preview).toMatchObject({ vm: 'control-node', tier: 1, limit: 16384 });
      expect(preview.policy).toMatch(/\/32/);

      const seen = { payloads: [] as string[] };
      stopGuest = guest(w, cp, povId, seen);
      const install = await w.call('pov.installControlNode', { id: povId });
      const done = await w.jobs.wait(install.jobId);
      expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
      const log = w.db.prepare('SELECT message FROM job_log WHERE job_id = ? ORDER BY seq').all(install.jobId) as { message: string }[];
      expect(log.at(-1)!.message).toBe('control node control-node enrolled: Ed25519');
      pov = (await w.call('pov.get', { id: povId })).pov;
      expect(pov.controlNode).toMatchObject({ status: 'enrolled', mode: 'ed25519', reason: null });
      expect(seen.payloads).toHaveLength(1);

      // Ordering as Skytap saw it: the PUT with the payload came after the environment was running,
      // and a second PUT cleared it once the agent enrolled.
      const puts = w.emu.requests.filter((r) => r.method === 'PUT' && r.path.includes('/user_data'));
      expect(puts).toHaveLength(2);
      const powerOn = w.emu.requests.findIndex(
        (r) => r.method === 'PUT' && (r.body as { runstate?: string } | null)?.runstate === 'running',
      );
      expect(powerOn).toBeGreaterThanOrEqual(0);
      expect(w.emu.requests.indexOf(puts[0]!)).toBeGreaterThan(powerOn);
      expect((puts[0]!.body as { contents: string }).contents).toContain(BEGIN_MARKER);
      expect((puts[1]!.body as { contents: string }).contents).toBe('');
      const env = [...w.emu.state.environments.values()].find((e) => e.id === pov.envId)!;
      const vm = env.vms.find((v) => v.name === 'control-node')!;
      expect(vm.userData).toBe('');
    },
    60_000,
  );

  it('a provision with one Linux VM starts the install job itself; the provision does not wait for enrolment', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' }, tuning: { controlNode: { enrolPollMs: 30 } } });
    cp = await new ControlPlaneDouble().start();
    await w.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
    const tpl = w.emu.state.addTemplate({
      name: 'One Linux',
      vms: [
        { name: 'BtPocLin01', guestOS: 'ubuntu-64' },
        { name: 'win01', guestOS: 'windows2019srv-64' },
      ],
    });
    const created = await w.call('pov.create', { templateId: tpl.id, name: 'Auto' });
    const provision = await w.jobs.wait(created.jobId);
    expect(provision.state, JSON.stringify(provision.error)).toBe('succeeded');
    const povId = (await w.call('pov.list', {})).povs[0]!.id;
    const installs = w.db.prepare("SELECT id FROM jobs WHERE kind = 'pov.installControlNode' AND subject = ?").all(povId) as {
      id: string;
    }[];
    expect(installs).toHaveLength(1);
    // The provision finished while the install still waits for an agent (no guest runs yet).
    expect(['queued', 'running']).toContain(w.jobs.get(installs[0]!.id)!.state);

    const seen = { payloads: [] as string[] };
    stopGuest = guest(w, cp, povId, seen);
    const done = await w.jobs.wait(installs[0]!.id);
    expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
    expect(done.result).toMatchObject({ vm: 'BtPocLin01', attestation: 'ed25519', tier: 1 });
    expect((await w.call('pov.get', { id: povId })).pov.controlNode).toMatchObject({ status: 'enrolled', mode: 'ed25519', name: null });
  }, 60_000);

  it(
    'with Settings → Control node empty, a provision starts no install bound to fail: the row and readiness say what to enter; ' +
      'Install is refused and changes nothing',
    async () => {
      w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
      cp = await new ControlPlaneDouble().start();
      const tpl = w.emu.state.addTemplate({ name: 'One Linux', vms: [{ name: 'BtPocLin01', guestOS: 'ubuntu-64' }] });
      const created = await w.call('pov.create', { templateId: tpl.id, name: 'Fresh laptop' });
      const provision = await w.jobs.wait(created.jobId);
      expect(provision.state, JSON.stringify(provision.error)).toBe('succeeded');
      // The create's result does not claim an install that never started.
      expect(provision.result).toMatchObject({ controlNode: 'skipped' });
      const povId = (await w.call('pov.list', {})).povs[0]!.id;
      const installs = () => w.db.prepare("SELECT id FROM jobs WHERE kind = 'pov.installControlNode'").all();
      expect(installs()).toEqual([]);
      const gap = 'no control-plane URL and no agent image are set; enter them in Settings → Control node, then press Install control node';
      const row = async () => (await w.call('pov.get', { id: povId })).pov;
      expect((await row()).controlNode).toMatchObject({ vm: 'BtPocLin01', status: 'not_set_up', reason: gap });
      expect(w.jobs.log(created.jobId).map((l) => l.message)).toContain(`control node BtPocLin01: not installed, ${gap}`);
      const item = (await w.call('pov.readiness', { id: povId })).items.find((i) => i.key === 'controlNode');
      expect(item).toMatchObject({
        state: 'not_configured',
        detail: `Not set up: ${gap}. The POV works without it; it is what enrols BtPocLin01 with the control plane.`,
        action: { method: 'controlNode.saveSettings' },
      });

      // Install control node is refused before any job, and the row stays as it was.
      const before = await row();
      await expect(w.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({ code: 'unavailable', message: gap });
      expect(installs()).toEqual([]);
      expect((await row()).controlNode).toEqual(before.controlNode);

      // Half set: the message names only what is still missing.
      await w.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token });
      await expect(w.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({
        code: 'unavailable',
        message: 'no agent image is set; enter it in Settings → Control node, then press Install control node',
      });
      expect(installs()).toEqual([]);
    },
    60_000,
  );

  it('Install control node on a suspended POV is refused up front', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    cp = await new ControlPlaneDouble().start();
    const tpl = [...w.emu.state.templates.values()].find((t) => t.name === 'Windows AD lab')!;
    const created = await w.call('pov.create', { templateId: tpl.id, name: 'W' });
    await w.jobs.wait(created.jobId);
    const povId = (await w.call('pov.list', {})).povs[0]!.id;
    expect((await w.call('pov.get', { id: povId })).pov.controlNode.reason).toMatch(/no control-plane URL|no Linux VM/);
    await w.jobs.wait((await w.call('pov.suspend', { id: povId })).jobId);
    await expect(w.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('suspended'),
    });
  }, 60_000);

  it('argument objects are strict', () => {
    expect(povMethods['pov.setControlNodeName'].args.safeParse({ id: 'a', name: 'b', x: 1 }).success).toBe(false);
    expect(povMethods['pov.installControlNode'].args.safeParse({ id: '' }).success).toBe(false);
    expect(controlNodeMethods['controlNode.previewBootstrap'].args.safeParse({ povId: 'p', extra: true }).success).toBe(false);
    expect(bakeMethods['bake.runnerScript'].args.safeParse({ a: 1 }).success).toBe(false);
  });
});
