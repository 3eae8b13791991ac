import { afterEach, describe, expect, it } from 'vitest';
import { coreWorld, followPovUpdates, type CoreWorld } from '../pov/helpers';
import { until } from '../vm-manager/support';

/**
 * Naming a POV's control node VM or its role hosts is not a job, so no job change told the POV list:
 * it showed the old row until something else changed. Both now publish `pov.updated` (through the
 * real core: its Dispatcher, SQLite, the Skytap emulator over HTTP).
 */
let w: CoreWorld;
afterEach(async () => {
  await w?.close();
});

describe('pov.updated after the control node is named', () => {
  it('pov.setControlNodeName and pov.setRoleHosts each publish the POV row as the list shows it', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    const tpl = [...w.emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
    const created = await w.call('pov.create', { templateId: tpl.id, name: 'Named POV' });
    expect((await w.jobs.wait(created.jobId)).state).toBe('succeeded');
    const povId = (await w.call('pov.list', {})).povs[0]!.id;
    await new Promise((r) => setTimeout(r, 50)); // the provision's last events have landed

    const seen = followPovUpdates(w.base.hub);

    await w.call('pov.setControlNodeName', { id: povId, name: 'CONTROL-NODE' });
    const named = await until('an event with the name', () => seen.find((p) => p.controlNode.name === 'CONTROL-NODE'), 5_000, 20);
    expect(named).toMatchObject({ id: povId, controlNode: { name: 'CONTROL-NODE', reason: null } });
    expect(named).toEqual((await w.call('pov.list', {})).povs.find((p) => p.id === povId));

    await w.call('pov.setRoleHosts', { id: povId, brokerHost: 'rhel-target' });
    const hosts = await until(
      'an event with the broker host',
      () => seen.find((p) => p.controlNode.brokerHost === 'rhel-target'),
      5_000,
      20,
    );
    expect(hosts.id).toBe(povId);
  }, 60_000);
});
