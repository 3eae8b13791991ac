import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BROKER_UNVERIFIED } from '../../main/services/pam/service';
import { inventory, pamWorld, SECRETS, type PamWorld } from './world';

/**
 * End to end through the contract: a POV with one Linux control node and one Windows VM, created
 * on the Skytap emulator with its control node enrolled through the control-plane double, wired
 * into the PRA, Password Safe and Entitle doubles, then destroyed with nothing left in any of them.
 */
let p: PamWorld | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

const WIRED = {
  jumpoints: 1,
  jumpGroups: 1,
  shellJumps: 1,
  rdps: 1,
  workgroups: 1,
  assets: 2,
  systems: 2,
  functionalAccounts: 2,
  managedAccounts: 2,
  entitleResources: 1,
  containers: 1,
};
const EMPTY = Object.fromEntries(Object.keys(WIRED).map((k) => [k, 0]));

async function wire(p: PamWorld) {
  const { jobId } = await p.w.call('pam.wire', { povId: p.povId });
  return p.w.jobs.wait(jobId);
}

/** Every secret the run handled: what was typed, what the tenants minted, what travelled to the agent. */
function secretsOf(p: PamWorld, deployKeys: string[]): string[] {
  const praTokens = [...p.pra.tokens.values()].flat().map((t) => t.token);
  const sessions = [...p.ps.signIns];
  return [...Object.values(SECRETS).filter(Boolean), p.en.token, ...praTokens, ...deployKeys, ...sessions];
}

function scanForSecrets(p: PamWorld, secrets: string[]) {
  // Every regular file under the core's home: the database and its WAL, logs/, owner.json.
  const files = (readdirSync(p.w.dir, { recursive: true }) as string[]).map((f) => join(p.w.dir, f)).filter((f) => statSync(f).isFile());
  const found: string[] = [];
  for (const f of files) {
    const bytes = readFileSync(f);
    for (const s of secrets) if (bytes.includes(Buffer.from(s))) found.push(`${s.slice(0, 6)}… in ${f}`);
  }
  const rows = JSON.stringify([
    p.w.db.prepare('SELECT * FROM jobs').all(),
    p.w.db.prepare('SELECT * FROM job_log').all(),
    p.w.db.prepare('SELECT * FROM pam_artifacts').all(),
    p.w.db.prepare('SELECT * FROM pam_tenants').all(),
    p.w.db.prepare('SELECT * FROM settings').all(),
  ]);
  for (const s of secrets) if (rows.includes(s)) found.push(`${s.slice(0, 6)}… in a row`);
  return { found, files: files.length };
}

describe('pam: wire and destroy end to end against the doubles', () => {
  it('wires the Gateway, 2 jump items, Password Safe, Entitle and the broker; destroy leaves nothing; no secret at rest', async () => {
    p = await pamWorld();
    const job = await wire(p);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(WIRED);

    // The POV Gateway: clustered linux-x86, found by code_name, run with its DEPLOY_KEY, connected.
    const [jp] = [...p.pra.store.jumpoint.values()];
    expect(jp).toMatchObject({
      code_name: `pov_${p.povId}`,
      platform: 'linux-x86',
      clustered: true,
      shell_jump_enabled: true,
      protocol_tunnel_enabled: true,
      connected: true,
      external_jump_item_network_id: `pov_${p.povId}`,
    });
    const [container] = [...p.cp.containers.values()];
    expect(container).toMatchObject({
      name: 'povdesk-jumpoint',
      image: 'registry.example.test/bt/jumpoint:25.2',
      env: { DEPLOY_KEY: jp!.docker_deploy_key },
      args: ['--restart=unless-stopped'],
    });
    // Per VM: shell-jump ssh 22 for Linux, remote-rdp for Windows, tagged with the POV, named after the VM.
    const vms = p.w.db.prepare('SELECT name, ip FROM pov_vms WHERE pov_id = ?').all(p.povId) as { name: string; ip: string }[];
    const ip = (n: string) => vms.find((v) => v.name === n)!.ip;
    expect([...p.pra.store['shell-jump'].values()][0]).toMatchObject({
      name: 'control-node',
      hostname: ip('control-node'),
      protocol: 'ssh',
      port: 22,
      jumpoint_id: jp!.id,
      tag: `pov_${p.povId}`,
    });
    expect([...p.pra.store['remote-rdp'].values()][0]).toMatchObject({
      name: 'win-broker',
      hostname: ip('win-broker'),
      jumpoint_id: jp!.id,
    });
    // Per-type id spaces: both items are id 1 in their own type.
    expect([...p.pra.store['shell-jump'].keys()]).toEqual([1]);
    expect([...p.pra.store['remote-rdp'].keys()]).toEqual([1]);
    // Password Safe: workgroup per POV, asset per VM (its IP), managed system with the functional account.
    expect([...p.ps.workgroups.values()][0]).toMatchObject({ Name: `pov_${p.povId}` });
    expect([...p.ps.assets.values()].map((a) => a.IPAddress).sort()).toEqual([ip('control-node'), ip('win-broker')].sort());
    expect([...p.ps.systems.values()].every((s) => s.AutoManagementFlag === true && typeof s.FunctionalAccountID === 'number')).toBe(true);
    expect([...p.ps.accounts.values()].map((a) => a.AccountName).sort()).toEqual(['povadmin', 'svc-demo']);
    expect(p.ps.versionsSeen).toEqual(new Set(['3.1']));
    expect(p.ps.sessions.size).toBe(0); // every session signed out
    // Entitle: the jump group is requestable through the PRA integration.
    const [res] = [...p.en.resources.values()];
    expect((res!.integration as { name: string }).name).toBe('Acme PRA');
    // The broker installer ran through the agent on the Windows VM with the operator's key.
    expect([...p.cp.brokerInstalls.values()]).toEqual([expect.objectContaining({ host: ip('win-broker'), installKey: SECRETS.brokerKey })]);

    const st = await p.w.call('pam.status', { povId: p.povId });
    expect(st.gateway).toMatchObject({ state: 'done', connected: true, node: expect.stringContaining('control-node') });
    expect(st.broker.label).toMatch(/^broker: verified — win-broker; Password Safe answers for /);
    expect(st.vms.map((v) => [v.name, v.jumpItem.type, v.jumpItem.state, v.passwordSafe.state, v.entitle.state]).sort()).toEqual([
      ['control-node', 'shell_jump', 'done', 'done', 'done'],
      ['win-broker', 'remote_rdp', 'done', 'done', 'done'],
    ]);
    expect(st.entitle.sshIntegration).toMatchObject({ enabled: false, reason: expect.stringContaining('Kubernetes') });
    expect(st.tenants).toMatchObject({
      pra: { secretSet: true },
      passwordSafe: { auth: 'ps-auth', secretSet: true },
      entitle: { tokenSet: true },
      brokerInstallKeySet: true,
    });

    const deployKeys = [String(jp!.docker_deploy_key)];
    expect(deployKeys[0]).toMatch(/^dk_/);

    // A second wire finds everything and creates nothing.
    const again = await wire(p);
    expect(again.state, JSON.stringify(again.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(WIRED);

    // Destroy: unwired first (before the agent is revoked and the environment goes), nothing left.
    const d = await p.w.call('pov.destroy', { id: p.povId });
    const destroyed = await p.w.jobs.wait(d.jobId);
    expect(destroyed.state, JSON.stringify(destroyed.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(EMPTY);
    expect(p.pra.nodes.size).toBe(0);
    const log = (p.w.db.prepare('SELECT message FROM job_log WHERE job_id = ? ORDER BY seq').all(d.jobId) as { message: string }[]).map(
      (r) => r.message,
    );
    const unwired = log.findIndex((m) => m.startsWith('unwired from BeyondTrust'));
    const revoked = log.findIndex((m) => m.startsWith('revoked control node agent'));
    expect(unwired).toBeGreaterThanOrEqual(0);
    expect(revoked).toBeGreaterThan(unwired);
    // The POV's secrets left the keychain with it.
    expect((await p.w.call('pam.status', { povId: p.povId })).tenants).toMatchObject({
      pra: { secretSet: false },
      brokerInstallKeySet: false,
    });

    // A run a crash left "running" on a POV since destroyed is not restarted at start-up.
    p.w.db.prepare("UPDATE pam_runs SET op = 'wire', state = 'running'").run();
    expect(p.w.services.pam.resumeInterrupted()).toEqual([]);
    expect(p.w.db.prepare('SELECT state FROM pam_runs').get()).toEqual({ state: 'failed' });

    // No secret in the log file, the database (and its WAL) or any job record.
    p.w.db.pragma('wal_checkpoint(TRUNCATE)');
    const secrets = secretsOf(p, deployKeys);
    expect(secrets.length).toBeGreaterThan(8);
    const scan = scanForSecrets(p, secrets);
    expect(scan.files).toBeGreaterThan(1);
    expect(scan.found).toEqual([]);
  }, 120_000);

  it('with tenants saved, the control node enrolling starts the wiring by itself', async () => {
    p = await pamWorld({ tenantsBeforeEnrol: true });
    const jobs = p.w.db.prepare("SELECT id FROM jobs WHERE kind = 'pam.wire' AND subject = ?").all(p.povId) as { id: string }[];
    expect(jobs).toHaveLength(1);
    const job = await p.w.jobs.wait(jobs[0]!.id);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(WIRED);
  }, 120_000);

  it('a crash at each create, then a restart: the run resumes and makes no duplicate; a crash during unwire too', async () => {
    p = await pamWorld();
    const svc = p.w.services.pam;
    const steps = [
      'created:jump_group',
      'created:jumpoint',
      'created:container',
      'created:jump_item',
      'created:workgroup',
      'created:functional_account',
      'created:asset',
      'created:managed_system',
      'created:managed_account',
      'created:entitle_resource',
    ];
    let first = true;
    for (const step of steps) {
      p.crashAt.step = step;
      // What a killed process leaves: the run marked running; start-up resumes it.
      const jobId = first ? (await p.w.call('pam.wire', { povId: p.povId })).jobId : svc.resumeInterrupted()[0]!;
      first = false;
      const job = await p.w.jobs.wait(jobId);
      expect(p.crashAt.step, `${step} was reached`).toBeNull();
      expect(job.state).toBe('cancelled');
      p.w.db.prepare("UPDATE pam_runs SET state = 'running'").run();
      if (step === 'created:workgroup') {
        // Password Safe has not answered for any asset yet: the broker is unverified, in the UI's words.
        expect((await p.w.call('pam.status', { povId: p.povId })).broker.label).toBe(BROKER_UNVERIFIED);
      }
    }
    const [resumed] = svc.resumeInterrupted();
    const done = await p.w.jobs.wait(resumed!);
    expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(WIRED);

    for (const step of ['deleted:entitle_resource', 'deleted:managed_system', 'deleted:asset', 'deleted:workgroup', 'deleted:jumpoint']) {
      p.crashAt.step = step;
      const job = await p.w.jobs.wait((await p.w.call('pam.unwire', { povId: p.povId })).jobId);
      expect(p.crashAt.step, `${step} was reached`).toBeNull();
      expect(job.state).toBe('cancelled');
    }
    const last = await p.w.jobs.wait((await p.w.call('pam.unwire', { povId: p.povId })).jobId);
    expect(last.state, JSON.stringify(last.error)).toBe('succeeded');
    expect(inventory(p)).toEqual(EMPTY);
    expect(p.w.db.prepare('SELECT COUNT(*) AS n FROM pam_artifacts').get()).toEqual({ n: 0 });
  }, 120_000);
});
