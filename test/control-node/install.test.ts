import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import migration from '../../main/services/store/migrations/003-control-node';
import { AgentStore } from '../../main/services/control-node/agents';
import { DEFAULT_CONFIG, type ControlNodeConfig } from '../../main/services/control-node/config';
import { HttpControlPlane } from '../../main/services/control-node/control-plane';
import { ControlPlaneDouble } from '../support/control-plane-double';
import {
  installControlNode,
  teardownControlNode,
  type ControlNodePatch,
  type ControlNodePov,
  type InstallDeps,
  type InstallJob,
} from '../../main/services/control-node/install';
import { BEGIN_MARKER, END_MARKER } from '../../main/services/control-node/markers';
import { makeBundle } from './fixtures';

/** An in-memory POV the way the POV service would describe it. */
class Povs {
  patches: ControlNodePatch[] = [];
  row: ControlNodePatch = {};
  constructor(public pov: ControlNodePov) {}
  getPov(id: string) {
    return id === this.pov.id ? this.pov : null;
  }
  setControlNode(_id: string, patch: ControlNodePatch) {
    this.patches.push(patch);
    this.row = { ...this.row, ...patch };
  }
}

/** Records every user_data call in order, with what the control plane had minted at that moment. */
class UserData {
  events: { op: 'set' | 'clear'; vmId: string; contents?: string; agentsMinted: number }[] = [];
  constructor(private readonly cp: ControlPlaneDouble) {}
  onSet: (contents: string) => void = () => undefined;
  async set(_env: string, vmId: string, contents: string) {
    this.events.push({ op: 'set', vmId, contents, agentsMinted: this.cp.agents.size });
    this.onSet(contents);
  }
  async clear(_env: string, vmId: string) {
    this.events.push({ op: 'clear', vmId, agentsMinted: this.cp.agents.size });
  }
}

function jobLog() {
  const lines: { message: string; level: string }[] = [];
  const controller = new AbortController();
  const job: InstallJob = {
    signal: controller.signal,
    progress: () => undefined,
    log: (message, level = 'info') => lines.push({ message, level }),
  };
  return { job, lines, controller };
}

const pov = (over: Partial<ControlNodePov> = {}): ControlNodePov => ({
  id: 'pov-1',
  envId: '12345',
  runstate: 'running',
  controlNodeName: null,
  enrolledVmId: null,
  vms: [
    { id: 'v1', name: 'DC01', os: 'windows', ip: '10.0.0.11' },
    { id: 'v2', name: 'BtPocLin01', os: 'linux', ip: '10.0.0.10' },
    { id: 'v3', name: 'App01', os: 'windows', ip: null },
  ],
  ...over,
});

describe('installControlNode: ordering against the control-plane double and a real SQLite file', () => {
  let dir: string;
  let db: Database.Database;
  let cp: ControlPlaneDouble;
  let clock: number;
  let agents: AgentStore;
  const config: ControlNodeConfig = {
    ...DEFAULT_CONFIG,
    controlPlaneUrl: 'https://cp.example.com',
    agentImage: 'registry.example.com/agent:1',
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-install-'));
    db = new Database(join(dir, 'app.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    migration.up(db);
    agents = new AgentStore(db);
    clock = Date.parse('2026-12-01T03:00:00Z');
    cp = await new ControlPlaneDouble(() => clock).start();
  });
  afterEach(async () => {
    await cp.stop();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function deps(povs: Povs, userData: UserData, over: Partial<InstallDeps> = {}): InstallDeps {
    return {
      povs,
      userData,
      controlPlane: new HttpControlPlane(cp.url, cp.token, { now: () => new Date(clock) }),
      agents,
      config,
      now: () => new Date(clock),
      // Virtual time: each wait moves the clock; yield so the HTTP round trips happen.
      sleep: async (ms) => {
        clock += ms;
        await new Promise((r) => setImmediate(r));
      },
      enrolPollMs: 10_000,
      ...over,
    };
  }

  it('Ed25519: injects after the code is minted, clears user_data once enrolled, last line says Ed25519', async () => {
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()][0]!, 'ed25519'), 5);
    const { job, lines } = jobLog();
    const r = await installControlNode(deps(povs, ud), 'pov-1', job);
    expect(r).toMatchObject({ vm: 'BtPocLin01', attestation: 'ed25519', tier: 1 });
    expect(ud.events.map((e) => e.op)).toEqual(['set', 'clear']);
    expect(ud.events[0]!.vmId).toBe('v2');
    expect(ud.events[0]!.agentsMinted).toBe(1);
    const payload = ud.events[0]!.contents!;
    expect(payload).toContain(BEGIN_MARKER);
    expect(payload).toContain(END_MARKER);
    expect(payload).toContain(cp.agents.get(r.agentId)!.code);
    expect(payload).toContain('cidr: 10.0.0.11/32');
    expect(payload).not.toContain('JOIN_TOKEN');
    expect(lines.at(-1)!.message).toBe('control node BtPocLin01 enrolled: Ed25519');
    expect(lines.some((l) => /App01/.test(l.message) && l.level === 'warn')).toBe(true);
    expect(povs.row).toMatchObject({ vmId: 'v2', status: 'enrolled', reason: null, mode: 'ed25519' });
    expect(agents.get(r.agentId)).toMatchObject({ state: 'enrolled', attestation: 'ed25519', tier: 1 });
    expect(agents.get(r.agentId)!.cleared_at).not.toBeNull();
  });

  it('never injects before power-on: a suspended environment is refused with the reason on the row, nothing minted', async () => {
    const povs = new Povs(pov({ runstate: 'suspended' }));
    const ud = new UserData(cp);
    const { job } = jobLog();
    await expect(installControlNode(deps(povs, ud), 'pov-1', job)).rejects.toMatchObject({ code: 'conflict' });
    expect(povs.row.status).toBe('failed');
    expect(povs.row.reason).toMatch(/suspended; start it, then press Install control node/);
    expect(cp.agents.size).toBe(0);
    expect(ud.events).toEqual([]);
  });

  it('a resolution refusal lands on the row as none with the candidates, nothing minted', async () => {
    const povs = new Povs(pov({ controlNodeName: 'broker' }));
    const ud = new UserData(cp);
    const { job } = jobLog();
    await expect(installControlNode(deps(povs, ud), 'pov-1', job)).rejects.toThrow(/no VM is called "broker"/);
    expect(povs.row).toMatchObject({ status: 'none', vmId: null });
    expect(povs.row.reason).toContain('candidates: DC01, BtPocLin01, App01');
    expect(cp.agents.size).toBe(0);
  });

  it('SPIRE: checked, join token minted into the payload, last line says SPIRE', async () => {
    cp.spireInfo = { trustDomain: 'povdesk.test', serverAddress: 'spire.povdesk.test:8091', trustBundle: BUNDLE };
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()][0]!, 'spire'), 5);
    const checked: string[] = [];
    const { job, lines } = jobLog();
    const r = await installControlNode(
      deps(povs, ud, {
        config: { ...config, spireEnabled: true },
        checkSpire: async (i) => (checked.push(i.address), { offered: true, answered: true, message: 'verified' }),
      }),
      'pov-1',
      job,
    );
    expect(checked).toEqual(['spire.povdesk.test:8091']);
    const agent = cp.agents.get(r.agentId)!;
    expect(ud.events[0]!.contents).toContain(`JOIN_TOKEN='${agent.joinToken}'`);
    expect(ud.events[0]!.contents).toContain('server_port = "8091"');
    expect(lines.at(-1)!.message).toBe('control node BtPocLin01 enrolled: SPIRE');
    expect(povs.row.mode).toBe('spire');
  });

  it("SPIRE: trust domain and bundle from Settings override the control plane's for the check and the payload", async () => {
    cp.spireInfo = { trustDomain: 'povdesk.test', serverAddress: 'spire.povdesk.test:8091', trustBundle: BUNDLE };
    const own = makeBundle();
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()][0]!, 'spire'), 5);
    const checked: { address: string; trustDomain: string; trustBundle: string }[] = [];
    const { job } = jobLog();
    await installControlNode(
      deps(povs, ud, {
        config: {
          ...config,
          spireEnabled: true,
          spireTrustDomain: 'corp.example',
          spireTrustBundle: own,
          spireAddress: 'spire.corp.example:8081',
        },
        checkSpire: async (i) => (checked.push(i), { offered: true, answered: true, message: 'verified' }),
      }),
      'pov-1',
      job,
    );
    expect(checked).toEqual([{ address: 'spire.corp.example:8081', trustDomain: 'corp.example', trustBundle: own }]);
    const payload = ud.events[0]!.contents;
    expect(payload).toContain('corp.example');
    expect(payload).toContain(own.trim().split('\n')[1]!);
    expect(payload).not.toContain(BUNDLE.trim().split('\n')[1]!);
  });

  it('SPIRE: another server at the address means not offered, the address named, Ed25519 payload, no join token', async () => {
    cp.spireInfo = { trustDomain: 'povdesk.test', serverAddress: 'spire.povdesk.test:8091', trustBundle: BUNDLE };
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()][0]!, 'ed25519'), 5);
    const { job, lines } = jobLog();
    await installControlNode(
      deps(povs, ud, {
        config: { ...config, spireEnabled: true, spireAddress: 'other.example:8081' },
        checkSpire: async (i) => ({
          offered: false,
          address: i.address,
          message: `${i.address} answered with another certificate; fix it`,
        }),
      }),
      'pov-1',
      job,
    );
    expect(lines.some((l) => l.level === 'warn' && l.message.includes('SPIRE not offered: other.example:8081'))).toBe(true);
    expect(cp.requests.some((q) => q.path.endsWith('/join-token'))).toBe(false);
    expect(ud.events[0]!.contents).not.toContain('JOIN_TOKEN');
    expect(lines.at(-1)!.message).toMatch(/enrolled: Ed25519$/);
  });

  /** An install with SPIRE offered and verified, the guest's agent enrolling as `mode`. */
  async function spireInstall(mode: 'spire' | 'ed25519') {
    cp.spireInfo = { trustDomain: 'povdesk.test', serverAddress: 'spire.povdesk.test:8091', trustBundle: BUNDLE };
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()][0]!, mode), 5);
    const { job, lines } = jobLog();
    const config2 = { ...config, spireEnabled: true };
    const r = await installControlNode(
      deps(povs, ud, { config: config2, checkSpire: async () => ({ offered: true, answered: true, message: 'verified' }) }),
      'pov-1',
      job,
    );
    return { r, lines, povs, ud };
  }

  it('SPIRE planned but the agent enrolled on Ed25519: a warning names the cause, the last line and the row say Ed25519', async () => {
    const { r, lines, povs, ud } = await spireInstall('ed25519');
    expect(ud.events[0]!.contents).toContain('JOIN_TOKEN=');
    expect(r.attestation).toBe('ed25519');
    const warn = lines.filter((l) => l.level === 'warn' && /expected SPIRE/.test(l.message));
    expect(warn.map((l) => l.message)).toEqual([
      'expected SPIRE but the agent fell back to Ed25519: BtPocLin01 could not reach the SPIRE server address for agents over plain TCP',
    ]);
    expect(lines.at(-1)!.message).toBe('control node BtPocLin01 enrolled: Ed25519');
    expect(povs.row.mode).toBe('ed25519');
    expect(agents.get(r.agentId)!.attestation).toBe('ed25519');
  });

  it('SPIRE planned and got: no fallback warning', async () => {
    const { lines } = await spireInstall('spire');
    expect(lines.filter((l) => l.level === 'warn')).toEqual([expect.objectContaining({ message: expect.stringMatching(/App01/) })]);
  });

  /** A POV of `n` VMs: the control node and n-1 Windows VMs with addresses (the policy grows with each). */
  const sized = (n: number) =>
    pov({
      vms: Array.from({ length: n }, (_, i) => ({
        id: `v${i}`,
        name: i === 0 ? 'BtPocLin01' : `win-${String(i).padStart(3, '0')}-${(i * 2654435761) % 1e6}`,
        os: (i === 0 ? 'linux' : 'windows') as 'linux' | 'windows',
        ip: `10.0.${i >> 8}.${i & 255 || 1}`,
      })),
    });

  for (const [tier, words] of [
    [1, /^the bootstrap is (\d+) of 16384 characters, sent as written \(tier 1\)$/],
    [2, /^the bootstrap is (\d+) characters; sent with comment lines removed \(tier 2\): (\d+) of 16384$/],
    [3, /^the bootstrap is (\d+) characters; sent gzip \+ base64 compressed \(tier 3\): (\d+) of 16384$/],
  ] as const) {
    it(`the tier log line says tier ${tier} with the sizes that were sent`, async () => {
      // The smallest POV (in steps of 5 VMs) whose bootstrap lands on this tier.
      let n = 1;
      for (;;) {
        const povs = new Povs(sized(n));
        const ud = new UserData(cp);
        ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()].at(-1)!, 'ed25519'), 5);
        const { job, lines } = jobLog();
        const r = await installControlNode(deps(povs, ud), 'pov-1', job);
        if (r.tier < tier) {
          n += n < 20 ? 5 : 25;
          continue;
        }
        expect(r.tier).toBe(tier);
        const line = lines.find((l) => /^the bootstrap is/.test(l.message))!;
        const m = words.exec(line.message);
        expect(m, line.message).not.toBeNull();
        const sent = ud.events[0]!.contents!;
        expect(Number(m!.at(-1))).toBe(sent.length);
        expect(r.chars).toBe(sent.length);
        if (tier > 1) expect(Number(m![1])).toBeGreaterThan(16384);
        expect(agents.get(r.agentId)).toMatchObject({ tier, chars: sent.length });
        break;
      }
    });
  }

  it('a control node on a manual network is refused with the reason before anything is minted or injected', async () => {
    const base = pov();
    const povs = new Povs({ ...base, vms: base.vms.map((v) => (v.id === 'v2' ? { ...v, networkType: 'manual' as const } : v)) });
    const ud = new UserData(cp);
    const { job } = jobLog();
    await expect(installControlNode(deps(povs, ud), 'pov-1', job)).rejects.toMatchObject({ code: 'conflict' });
    expect(povs.row).toMatchObject({ vmId: 'v2', status: 'failed' });
    expect(povs.row.reason).toMatch(
      /^BtPocLin01 is on a manual network: Skytap's metadata service answers only on VMs attached to an automatic network/,
    );
    expect(cp.agents.size).toBe(0);
    expect(ud.events).toEqual([]);
  });

  it('an automatic network, or none reported, is not refused', async () => {
    for (const networkType of ['automatic', null] as const) {
      const base = pov();
      const povs = new Povs({ ...base, vms: base.vms.map((v) => ({ ...v, networkType })) });
      const ud = new UserData(cp);
      ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()].at(-1)!, 'ed25519'), 5);
      await expect(installControlNode(deps(povs, ud), 'pov-1', jobLog().job)).resolves.toMatchObject({ vm: 'BtPocLin01' });
    }
  });

  it('no enrolment within 15 minutes: user_data cleared, agent revoked, reason on the row, job fails', async () => {
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    const { job } = jobLog();
    await expect(installControlNode(deps(povs, ud), 'pov-1', job)).rejects.toMatchObject({ code: 'timeout' });
    expect(ud.events.map((e) => e.op)).toEqual(['set', 'clear']);
    expect(povs.row.status).toBe('failed');
    expect(povs.row.reason).toMatch(/did not enrol before its code expired/);
    const [agent] = [...cp.agents.values()];
    expect(agent!.state).toBe('revoked');
    expect(agents.live('pov-1')).toEqual([]);
  });

  it('a POV too large for even tier 3 is refused naming both sizes; nothing injected; the code revoked', async () => {
    const vms = Array.from({ length: 3000 }, (_, i) => ({
      id: `v${i}`,
      name: `h-${(i * 2654435761) % 1e9}`,
      os: (i === 0 ? 'linux' : 'windows') as 'linux' | 'windows',
      ip: `10.${(i >> 8) & 255}.${i & 255}.${1 + (i % 200)}`,
    }));
    const povs = new Povs(pov({ vms }));
    const ud = new UserData(cp);
    const { job } = jobLog();
    await expect(installControlNode(deps(povs, ud), 'pov-1', job)).rejects.toThrow(/characters as written and \d+ compressed/);
    expect(ud.events).toEqual([]);
    expect(povs.row.reason).toMatch(/16384/);
    expect([...cp.agents.values()][0]!.state).toBe('revoked');
  });

  it('a re-install revokes the previous agent; teardown revokes the last', async () => {
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    ud.onSet = () => setTimeout(() => cp.enrol([...cp.agents.keys()].at(-1)!, 'ed25519'), 5);
    const first = await installControlNode(deps(povs, ud), 'pov-1', jobLog().job);
    const second = await installControlNode(deps(povs, ud), 'pov-1', jobLog().job);
    expect(cp.agents.get(first.agentId)!.state).toBe('revoked');
    expect(cp.agents.get(second.agentId)!.state).toBe('enrolled');
    expect(await teardownControlNode({ controlPlane: deps(povs, ud).controlPlane, agents }, 'pov-1')).toEqual([second.agentId]);
    expect(cp.agents.get(second.agentId)!.state).toBe('revoked');
  });

  it('a cancelled wait still clears user_data', async () => {
    const povs = new Povs(pov());
    const ud = new UserData(cp);
    const { job, controller } = jobLog();
    ud.onSet = () => setTimeout(() => controller.abort(), 5);
    await expect(
      installControlNode(
        deps(povs, ud, {
          sleep: (ms, signal) =>
            new Promise((res, rej) => {
              const t = setTimeout(res, 20);
              signal.addEventListener('abort', () => (clearTimeout(t), rej(new Error('cancelled'))), { once: true });
            }),
        }),
        'pov-1',
        job,
      ),
    ).rejects.toThrow();
    expect(ud.events.map((e) => e.op)).toEqual(['set', 'clear']);
    expect(povs.row).toMatchObject({ status: 'failed', reason: expect.stringContaining('cancelled') });
    expect([...cp.agents.values()][0]!.state).toBe('revoked');
  });
});

const BUNDLE = `-----BEGIN CERTIFICATE-----
MIIBfTCCASOgAwIBAgIUFakeButWellFormedBase64ForTheHeredocTestAAAAwCgYIKoZIzj0EAwIw
-----END CERTIFICATE-----
`;
