import { afterEach, describe, expect, it } from 'vitest';
import { AgentStore } from '../../main/services/control-node/agents';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { getPov } from '../../main/services/pov/repo';
import { PovService } from '../../main/services/pov/service';
import { AppError } from '../../shared/contract/errors';
import type { ControlNodeInstaller } from '../../main/services/pov/types';
import { coreWorld, createPov, world, type CoreWorld, type World } from '../pov/helpers';
import { guest, jobLog } from './harness';

/**
 * Where the control node meets the POV lifecycle: the provision hook's statuses, destroy revoking
 * the agent, installs tracked by the PovService, and the per-POV role hosts. Real SQLite, the
 * Skytap emulator over HTTP and the control-plane double over HTTP.
 */
let w: CoreWorld | World;
let cw: CoreWorld;
let cp: ControlPlaneDouble;
let stopGuest = () => {};
afterEach(async () => {
  stopGuest();
  stopGuest = () => {};
  await cp?.stop().catch(() => {});
  await w?.close();
});

/** The real core (the enrolment poll shortened) with the control plane saved in its settings. */
async function setup(): Promise<CoreWorld> {
  w = cw = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' }, tuning: { controlNode: { enrolPollMs: 30 } } });
  cp = await new ControlPlaneDouble().start();
  await cw.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
  return cw;
}

/** A POV from the seed's "PAM POV" template: two Linux VMs (control-node, rhel-target). */
async function pamPov(h: CoreWorld): Promise<string> {
  const tpl = [...w.emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
  const created = await h.call('pov.create', { templateId: tpl.id, name: 'PAM' });
  const job = await w.jobs.wait(created.jobId);
  expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
  return (await h.call('pov.list', {})).povs[0]!.id;
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the provision hook and the status the installer recorded', () => {
  it('a refusal stays `none` with its reason (not overwritten with failed); the POV is active with no error', async () => {
    const h = await setup();
    const povId = await pamPov(h);
    const { pov } = await h.call('pov.get', { id: povId });
    expect(pov.state).toBe('active');
    expect(pov.errorMessage).toBeNull();
    expect(pov.controlNode).toMatchObject({ status: 'none', vmId: null, vm: null });
    expect(pov.controlNode.reason).toMatch(/2 Linux VMs.*candidates: control-node, rhel-target/);
  }, 30_000);

  it('an error the installer did not record becomes failed; one it recorded keeps its status and reason', async () => {
    const pw = (w = await world());
    let installer: ControlNodeInstaller = async () => {
      throw new AppError('unavailable', 'control plane unreachable');
    };
    const svc = new PovService({
      ...pw.deps,
      jobs: pw.jobs,
      hub: pw.hub,
      controlNode: { ...pw.deps.controlNode, installAfterPowerOn: (povId, ctx) => installer(povId, ctx) },
    });
    const a = await createPov({ ...pw, svc }, 'A');
    expect(a.job.state).toBe('succeeded');
    expect(getPov(w.db, a.povId)).toMatchObject({
      control_node_status: 'failed',
      control_node_reason: 'control plane unreachable',
      error_message: null,
    });

    installer = async (povId) => {
      svc.setControlNode(povId, { control_node_status: 'none', control_node_reason: 'no Linux VM is available' });
      throw new AppError('conflict', 'refused (see the row)');
    };
    const b = await createPov({ ...pw, svc }, 'B');
    expect(b.job.state).toBe('succeeded');
    expect(getPov(w.db, b.povId)).toMatchObject({ control_node_status: 'none', control_node_reason: 'no Linux VM is available' });
  }, 30_000);
});

describe('role hosts per POV', () => {
  it('naming the Resource Broker host leaves the other Linux VM as the only one; clearing it refuses again', async () => {
    const h = await setup();
    const povId = await pamPov(h);
    const set = await h.call('pov.setRoleHosts', { id: povId, brokerHost: 'RHEL-TARGET' });
    expect(set.controlNode).toMatchObject({
      resolvedVm: 'control-node',
      status: null,
      reason: null,
      brokerHost: 'RHEL-TARGET',
      entitleHost: null,
    });
    const view = (await h.call('pov.list', {})).povs[0]!;
    expect(view.controlNode).toMatchObject({ vm: 'control-node', brokerHost: 'RHEL-TARGET' });
    const preview = await h.call('controlNode.previewBootstrap', { povId });
    expect(preview.vm).toBe('control-node');

    const entitle = await h.call('pov.setRoleHosts', { id: povId, entitleHost: 'control-node' });
    expect(entitle.controlNode).toMatchObject({ resolvedVm: null, status: 'none', entitleHost: 'control-node', brokerHost: 'RHEL-TARGET' });
    expect(entitle.controlNode.reason).toMatch(/no Linux VM is available/);

    const cleared = await h.call('pov.setRoleHosts', { id: povId, entitleHost: '', brokerHost: '' });
    expect(cleared.controlNode).toMatchObject({ resolvedVm: null, status: 'none', entitleHost: null, brokerHost: null });
    expect(cleared.controlNode.reason).toMatch(/2 Linux VMs/);
    await expect(h.call('pov.setRoleHosts', { id: povId, brokerHost: 'a\u0007b' })).rejects.toThrow();
    await expect(h.call('pov.setRoleHosts', { id: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
  }, 30_000);
});

describe('destroy revokes the agent', () => {
  it('revokes the enrolled agent (before the DELETE) and destroys the environment', async () => {
    const h = await setup();
    const povId = await pamPov(h);
    await h.call('pov.setControlNodeName', { id: povId, name: 'control-node' });
    stopGuest = guest(w, cp, povId);
    const install = await h.call('pov.installControlNode', { id: povId });
    expect((await w.jobs.wait(install.jobId)).state).toBe('succeeded');
    const agentId = new AgentStore(w.db).latest(povId)!.agent_id;
    expect(cp.agents.get(agentId)!.state).toBe('enrolled');

    const destroy = await h.call('pov.destroy', { id: povId });
    const done = await w.jobs.wait(destroy.jobId);
    expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
    expect(cp.agents.get(agentId)!.state).toBe('revoked');
    expect(new AgentStore(w.db).get(agentId)!.state).toBe('revoked');
    expect(jobLog(w, destroy.jobId)).toContain(`revoked control node agent ${agentId} (and its SPIRE entries)`);
    const revokedAt = cp.requests.findIndex((r) => r.method === 'DELETE' && r.path === `/v1/agents/${agentId}`);
    expect(revokedAt).toBeGreaterThanOrEqual(0);
    expect(w.emu.state.environmentIds()).toEqual([]);
    expect(getPov(w.db, povId)).toMatchObject({ state: 'destroyed', control_node_status: 'revoked', error_message: null });
  }, 40_000);

  it('a control plane that cannot be reached is logged on the job and the row and does not block the destroy', async () => {
    const h = await setup();
    const povId = await pamPov(h);
    await h.call('pov.setRoleHosts', { id: povId, brokerHost: 'rhel-target' });
    stopGuest = guest(w, cp, povId);
    const install = await h.call('pov.installControlNode', { id: povId });
    expect((await w.jobs.wait(install.jobId)).state).toBe('succeeded');
    const agentId = new AgentStore(w.db).latest(povId)!.agent_id;
    await cp.stop();

    const destroy = await h.call('pov.destroy', { id: povId });
    const done = await w.jobs.wait(destroy.jobId);
    expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
    expect(w.emu.state.environmentIds()).toEqual([]);
    const row = getPov(w.db, povId)!;
    expect(row.state).toBe('destroyed');
    expect(row.error_message).toBeNull();
    expect(row.control_node_reason).toMatch(
      new RegExp(
        `could not revoke the control node's agent: agent ${agentId} .*cannot reach the control plane.*revoke the agent in the ` +
          `control plane`,
      ),
    );
    expect(jobLog(w, destroy.jobId).some((m) => m.startsWith("could not revoke the control node's agent"))).toBe(true);
    // left live so a later teardown can still revoke it
    expect(new AgentStore(w.db).get(agentId)!.state).toBe('enrolled');
  }, 40_000);
});

describe('an install running beside the lifecycle', () => {
  it(
    'Suspend is refused with conflict, a second install too; ' + 'Destroy cancels the install first (user_data cleared, agent revoked)',
    async () => {
      const h = await setup();
      const povId = await pamPov(h);
      await h.call('pov.setControlNodeName', { id: povId, name: 'control-node' });
      const seen = { payloads: [] as string[] };
      stopGuest = guest(w, cp, povId, seen, false); // the guest sees the payload but never enrols
      const install = await h.call('pov.installControlNode', { id: povId });
      await until('the payload on the guest', () => seen.payloads.length === 1);
      await until('status waiting', () => getPov(w.db, povId)!.control_node_status === 'waiting');

      const view = (await h.call('pov.get', { id: povId })).pov;
      expect(view.controlNode.jobId).toBe(install.jobId);
      expect(view.actions).toMatchObject({ suspend: false, destroy: true });
      await expect(h.call('pov.suspend', { id: povId })).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining('control-node install is running'),
      });
      await expect(h.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({ code: 'conflict' });

      const destroy = await h.call('pov.destroy', { id: povId });
      const done = await w.jobs.wait(destroy.jobId);
      expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
      expect(w.jobs.get(install.jobId)!.state).toBe('cancelled');
      const agentId = new AgentStore(w.db).latest(povId)!.agent_id;
      expect(cp.agents.get(agentId)!.state).toBe('revoked');
      // user_data was cleared before the environment was deleted
      const clearAt = w.emu.requests.findIndex(
        (r) => r.method === 'PUT' && r.path.includes('/user_data') && (r.body as { contents: string }).contents === '',
      );
      const deleteAt = w.emu.requests.findIndex((r) => r.method === 'DELETE');
      expect(clearAt).toBeGreaterThanOrEqual(0);
      expect(clearAt).toBeLessThan(deleteAt);
      expect(jobLog(w, destroy.jobId).some((m) => m.startsWith(`cancelling the control-node install (job ${install.jobId})`))).toBe(true);
      expect(w.emu.state.environmentIds()).toEqual([]);
      expect((await h.call('pov.list', { includeDestroyed: true })).povs[0]!.controlNode.jobId).toBeNull();
    },
    40_000,
  );
});

describe('after a restart', () => {
  it('an install left installing or waiting says it was interrupted (failed, with the remedy); enrolled rows are untouched', async () => {
    const pw = (w = await world());
    const a = await createPov(pw, 'A');
    const b = await createPov(pw, 'B');
    pw.svc.setControlNode(a.povId, { control_node_status: 'waiting', control_node_vm_id: 'vm1' });
    pw.svc.setControlNode(b.povId, { control_node_status: 'enrolled', control_node_mode: 'spire' });
    const restarted = new PovService({ ...pw.deps, jobs: pw.jobs, hub: pw.hub });
    restarted.resumeInterrupted();
    expect(getPov(w.db, a.povId)).toMatchObject({
      control_node_status: 'failed',
      control_node_reason: expect.stringMatching(/interrupted.*press Install control node/),
    });
    expect(getPov(w.db, b.povId)).toMatchObject({ control_node_status: 'enrolled', control_node_mode: 'spire', control_node_reason: null });
  }, 30_000);
});

describe('Settings → Control node', () => {
  it('keeps the SPIRE trust domain and bundle, writes the default port, never returns the token, refuses bad values', async () => {
    const h = await setup();
    const { makeBundle } = await import('./fixtures');
    const bundle = makeBundle();
    const saved = await h.call('controlNode.saveSettings', {
      spireEnabled: true,
      spireAddress: 'spire.example.org',
      spireTrustDomain: 'example.org',
      spireTrustBundle: bundle,
    });
    expect(saved).toMatchObject({
      spireEnabled: true,
      spireAddress: 'spire.example.org:8081',
      spireTrustDomain: 'example.org',
      tokenSet: true,
    });
    expect(saved.spireTrustBundle.trim()).toBe(bundle.trim());
    expect(JSON.stringify(saved)).not.toContain(cp.token);
    await expect(h.call('controlNode.saveSettings', { spireTrustBundle: 'not a certificate' })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(h.call('controlNode.saveSettings', { spireTrustDomain: 'Bad Domain' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(h.call('controlNode.saveSettings', { spireAddress: 'host:99999' })).rejects.toMatchObject({ code: 'invalid_request' });
    expect((await h.call('controlNode.getSettings', {})).spireAddress).toBe('spire.example.org:8081');
  }, 30_000);
});
