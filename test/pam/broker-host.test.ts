import { afterEach, describe, expect, it } from 'vitest';
import { checkBrokerHost, type BrokerHostFacts } from '../../main/services/pam/broker-check';
import { pamWorld, type PamWorld } from './world';

const host = (over: Partial<BrokerHostFacts> = {}): BrokerHostFacts => ({
  name: 'win-broker',
  guestOs: 'windows2019srv-64',
  networkType: 'automatic',
  networkId: 'net-1',
  networkName: 'Default Network',
  ...over,
});
const cn = host({ name: 'control-node', guestOs: 'ubuntu-64' });

describe('the Resource Broker host check (what the platform reports)', () => {
  it("Windows Server 2019 and 2022 x64 on the control node's automatic network pass; WinRM is said to be unchecked from here", () => {
    for (const guestOs of ['windows2019srv-64', 'windows2019srvNext-64', 'windows2019srv_64']) {
      const r = checkBrokerHost(host({ guestOs }), cn);
      expect(r.refusal, guestOs).toBeNull();
      expect(r.unknowns).toEqual([expect.stringMatching(/^WinRM on win-broker \(5985\/5986\) is reached from the control node/)]);
    }
  });

  it('older or desktop Windows, 32-bit and non-Windows guests are refused naming what the platform reports', () => {
    for (const guestOs of [
      'windows9srv-64',
      'windows8srv-64',
      'windows7srv-64',
      'winNetStandard',
      'windows9-64',
      'windows2019srv',
      'ubuntu-64',
    ]) {
      const r = checkBrokerHost(host({ guestOs }), cn);
      expect(r.refusal, guestOs).toContain(`reports guest OS ${guestOs}`);
      expect(r.refusal).toMatch(/Windows Server 2019 or 2022 x64/);
    }
  });

  it('no guest OS, or a later server id this list does not know, is said but not refused', () => {
    expect(checkBrokerHost(host({ guestOs: null }), cn)).toMatchObject({
      refusal: null,
      unknowns: [expect.stringMatching(/reports no guest OS/), expect.stringMatching(/WinRM/)],
    });
    expect(checkBrokerHost(host({ guestOs: 'windows2022srvNext-64' }), cn).unknowns[0]).toMatch(
      /not known to be Windows Server 2019 or 2022/,
    );
  });

  it("a manual network, or another network than the control node's, is refused; a network not reported is said", () => {
    expect(checkBrokerHost(host({ networkType: 'manual' }), cn).refusal).toMatch(/^win-broker is on a manual network/);
    expect(checkBrokerHost(host({ networkId: 'net-2', networkName: 'Lab B' }), cn).refusal).toMatch(
      /^win-broker is on Lab B and the control node control-node on Default Network/,
    );
    const unreported = checkBrokerHost(host({ networkId: null, networkName: null, networkType: null }), cn);
    expect(unreported.refusal).toBeNull();
    expect(unreported.unknowns).toContainEqual(expect.stringMatching(/cannot be told \(the platform reports no network\)/));
  });
});

let p: PamWorld | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

function broker(p: PamWorld) {
  return p.w.db.prepare("SELECT state, error FROM pam_artifacts WHERE pov_id = ? AND kind = 'broker'").get(p.povId) as {
    state: string;
    error: string | null;
  };
}

describe('wiring checks the broker host from the VM read (emulator, doubles, real core)', () => {
  it('a Windows Server 2016 guest: the broker step fails with the reason, nothing is installed, the rest is wired', async () => {
    p = await pamWorld({ windowsVm: { name: 'win-broker', guestOS: 'windows9srv-64' } });
    const { jobId } = await p.w.call('pam.wire', { povId: p.povId });
    await p.w.jobs.wait(jobId);
    expect(broker(p)).toEqual({
      state: 'failed',
      error: expect.stringMatching(
        /^win-broker reports guest OS windows9srv-64; the Resource Broker needs Windows Server 2019 or 2022 x64/,
      ),
    });
    expect(p.cp.brokerInstalls.size).toBe(0);
    expect(p.pra.store['remote-rdp'].size).toBe(1);
  }, 60_000);

  it("a broker on another network than the control node's is refused naming both", async () => {
    p = await pamWorld({ windowsVm: { name: 'win-broker', guestOS: 'windows2019srvNext-64', networkName: 'Customer LAN' } });
    const { jobId } = await p.w.call('pam.wire', { povId: p.povId });
    await p.w.jobs.wait(jobId);
    expect(broker(p).error).toMatch(/^win-broker is on Customer LAN and the control node control-node on Default Network/);
    expect(p.cp.brokerInstalls.size).toBe(0);
  }, 60_000);

  it('Windows Server 2022 on the same network installs; the job log says WinRM is checked by the installer, not from here', async () => {
    p = await pamWorld({ windowsVm: { name: 'win-broker', guestOS: 'windows2019srvNext-64' } });
    const { jobId } = await p.w.call('pam.wire', { povId: p.povId });
    await p.w.jobs.wait(jobId);
    expect(p.cp.brokerInstalls.size).toBe(1);
    const log = p.w.db.prepare('SELECT level, message FROM job_log WHERE job_id = ?').all(jobId) as { level: string; message: string }[];
    expect(log).toContainEqual({ level: 'warn', message: expect.stringMatching(/^Resource Broker host: WinRM on win-broker/) });
  }, 60_000);
});
