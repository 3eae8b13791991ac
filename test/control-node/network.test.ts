import { afterEach, describe, expect, it } from 'vitest';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { coreWorld, type CoreWorld } from '../pov/helpers';

/**
 * What a VM's interfaces say about its network, through the real core and the Skytap emulator over
 * HTTP: a control node on a manual network is refused before anything is minted or injected (the
 * seed's reason instead of a 15-minute wait), and the VMs tab reads each VM's network and its
 * published services (Skytap's NAT of a guest port to a public host:port).
 */
let w: CoreWorld;
let cp: ControlPlaneDouble;
afterEach(async () => {
  await cp?.stop();
  await w?.close();
});

async function world() {
  w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' }, tuning: { controlNode: { enrolPollMs: 30 } } });
  cp = await new ControlPlaneDouble().start();
  await w.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
}

async function provision(name: string, vms: Parameters<CoreWorld['emu']['state']['addTemplate']>[0]['vms']) {
  const tpl = w.emu.state.addTemplate({ name, vms });
  const created = await w.call('pov.create', { templateId: tpl.id, name });
  const job = await w.jobs.wait(created.jobId);
  expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
  return (await w.call('pov.list', {})).povs.find((p) => p.name === name)!.id;
}

describe('a control node on a manual network', () => {
  it('the provision refuses it with the reason on the row; Install control node is refused too; nothing minted or injected', async () => {
    await world();
    const povId = await provision('Manual', [
      { name: 'BtPocLin01', guestOS: 'ubuntu-64', networkType: 'manual', networkName: 'Lab Manual' },
      { name: 'win01', guestOS: 'windows2019srv-64' },
    ]);
    const { pov, vms } = await w.call('pov.get', { id: povId });
    expect(pov.controlNode.status).toBe('failed');
    expect(pov.controlNode.vm).toBe('BtPocLin01');
    expect(pov.controlNode.reason).toMatch(
      /^BtPocLin01 is on a manual network: Skytap's metadata service answers only on VMs attached to an automatic network/,
    );
    expect(vms.find((v) => v.name === 'BtPocLin01')!.network).toEqual({ name: 'Lab Manual', type: 'manual' });
    expect(vms.find((v) => v.name === 'win01')!.network).toEqual({ name: 'Default Network', type: 'automatic' });

    await expect(w.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/manual network/),
    });
    expect(w.db.prepare("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'pov.installControlNode'").get()).toEqual({ n: 0 });
    expect(cp.agents.size).toBe(0);
    expect(w.emu.requests.filter((r) => r.method === 'PUT' && r.path.includes('/user_data'))).toEqual([]);
  }, 60_000);
});

describe('published services on the VMs tab', () => {
  it("each VM's published services come from its interfaces, follow a refresh, and never reach the wiring's addresses", async () => {
    await world();
    const povId = await provision('Published', [
      { name: 'BtPocLin01', guestOS: 'ubuntu-64', publishedPorts: [22] },
      { name: 'win01', guestOS: 'windows2019srv-64', publishedPorts: [3389, 5986] },
    ]);
    let vms = (await w.call('pov.get', { id: povId })).vms;
    const env = [...w.emu.state.environments.values()].find((e) => e.vms.some((v) => v.name === 'win01'))!;
    const emuWin = env.vms.find((v) => v.name === 'win01')!;
    const win = vms.find((v) => v.name === 'win01')!;
    expect(win.published).toEqual(
      emuWin.services.map((s) => ({
        internalPort: s.internalPort,
        externalHost: 'services-uswest.skytap.com',
        externalPort: s.externalPort,
      })),
    );
    expect(win.published.map((p) => p.internalPort)).toEqual([3389, 5986]);
    // The private address stays the VM's address (the policy and the wiring use it).
    expect(win.ip).toBe(emuWin.ip);
    const preview = await w.call('controlNode.previewBootstrap', { povId });
    expect(preview.policy).toContain(`${emuWin.ip}/32`);
    expect(preview.policy).not.toContain('skytap.com');

    // Published through Skytap's API (POST …/interfaces/{nic}/services), then read again.
    const nic = `nic-${env.id}-${emuWin.id}-0`;
    const res = await fetch(`${w.emu.url}/v2/configurations/${env.id}/vms/${emuWin.id}/interfaces/${nic}/services`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('demo:demo-token').toString('base64')}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({ internal_port: 443 }),
    });
    expect(res.status).toBe(200);
    const added = (await res.json()) as { internal_port: number; external_port: number; external_ip: string };
    expect(added.internal_port).toBe(443);
    const refresh = await w.call('pov.refreshVms', { id: povId });
    expect((await w.jobs.wait(refresh.jobId)).state).toBe('succeeded');
    vms = (await w.call('pov.get', { id: povId })).vms;
    expect(vms.find((v) => v.name === 'win01')!.published).toContainEqual({
      internalPort: 443,
      externalHost: added.external_ip,
      externalPort: added.external_port,
    });
    expect(vms.find((v) => v.name === 'BtPocLin01')!.published.map((p) => p.internalPort)).toEqual([22]);
  }, 60_000);
});
