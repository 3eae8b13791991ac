import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createCore } from '../../main/core/create';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { tempHome } from '../foundation/helpers';
import { EntitleDouble } from '../pam-doubles/entitle-double';
import { PasswordSafeDouble } from '../pam-doubles/password-safe-double';
import { PraDouble } from '../pam-doubles/pra-double';

/**
 * The wiring from the CLI, one `povdesk call` process per step, with the tenants' secrets in the
 * real keychain (gnome-keyring on a private D-Bus): save tenants, wire, read the status, unwire.
 * The POV (an active environment with an enrolled control node) is written straight into the
 * database first; the doubles and the control-plane double run in this process.
 */
const run = promisify(execFile);
const BIN = join(__dirname, '..', '..', 'bin', 'povdesk.mjs');
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

describe('pam from the CLI with the real keychain', () => {
  it('saveTenants → wire --wait → status → unwire --wait; the secrets live in the keychain only', async () => {
    const [cp, pra, ps, en] = await Promise.all([
      new ControlPlaneDouble().start(),
      new PraDouble().start(),
      new PasswordSafeDouble().start(),
      new EntitleDouble().start(),
    ]);
    stops.push(
      () => cp.stop(),
      () => pra.stop(),
      () => ps.stop(),
      () => en.stop(),
    );
    const praSecret = `pra-sec-${Date.now()}`;
    const psKey = `ps-key-${Date.now()}`;
    pra.addApiAccount('cli-api', praSecret);
    ps.apiKeys.set(psKey, { runAs: 'svc', password: null });
    en.addIntegration('PRA', 'BeyondTrust Privileged Remote Access');
    const home = tempHome();
    const core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test' });
    const at = new Date().toISOString();
    const db = core.base.db;
    const povId = '6f1c2a9e-1111-4222-8333-944455556666';
    const code = (await (
      await fetch(`${cp.url}/v1/enrolment-codes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cp.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ povId }),
      })
    ).json()) as { agentId: string };
    cp.enrol(code.agentId, 'ed25519');
    db.prepare(
      `INSERT INTO povs (id, name, template_id, template_name, env_name, env_id, state, runstate, control_node_vm_id, ` +
        `control_node_status, created_at, updated_at)
      VALUES (?, 'CLI POV', '1', 't', 'CLI POV [povdesk 6f1c2a9e]', '900', 'active', 'running', 'v1', 'enrolled', ?, ?)`,
    ).run(povId, at, at);
    const vm = db.prepare(
      'INSERT INTO pov_vms (pov_id, vm_id, name, os_platform, ip, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    vm.run(povId, 'v1', 'cn', 'linux', '10.0.0.1', at, at);
    vm.run(povId, 'v2', 'win', 'windows', '10.0.0.2', at, at);
    db.prepare(
      "INSERT INTO control_node_agents (agent_id, pov_id, env_id, vm_id, state, expires_at, created_at) VALUES (?, ?, '900', " +
        "'v1', 'enrolled', ?, ?)",
    ).run(code.agentId, povId, at, at);
    await core.close();
    cp.onContainer = (_a, _n, env) => void pra.checkIn(env.DEPLOY_KEY!, { hostname: 'cn', private_ip: '10.0.0.1' });

    const env = {
      ...process.env,
      POVDESK_FROM_SOURCE: '1',
      POVDESK_HOME: home,
      POVDESK_CONTROL_PLANE_URL: cp.url,
      POVDESK_CONTROL_PLANE_TOKEN: cp.token,
    };
    const cli = async (method: string, args: unknown, wait = false) => {
      const { stdout } = await run(process.execPath, [BIN, 'call', method, JSON.stringify(args), ...(wait ? ['--wait'] : [])], { env });
      return JSON.parse(stdout);
    };
    await cli('pam.saveSettings', { gatewayImage: 'registry.example.test/jumpoint:1', connectTimeoutSec: 10 });
    const view = await cli('pam.saveTenants', {
      povId,
      pra: { site: pra.url, clientId: 'cli-api', clientSecret: praSecret },
      passwordSafe: { url: ps.url, runAs: 'svc', apiKey: psKey },
      entitle: { url: en.url, token: en.token },
    });
    expect(view).toMatchObject({ pra: { secretSet: true }, passwordSafe: { secretSet: true }, entitle: { tokenSet: true } });
    expect(JSON.stringify(view)).not.toContain(praSecret);

    const wired = await cli('pam.wire', { povId }, true);
    expect(wired.state, JSON.stringify(wired.error)).toBe('succeeded');
    expect([pra.store['shell-jump'].size, pra.store['remote-rdp'].size, ps.assets.size, ps.systems.size, en.resources.size]).toEqual([
      1, 1, 2, 2, 1,
    ]);
    const st = await cli('pam.status', { povId });
    expect(st.gateway).toMatchObject({ connected: true, node: 'cn 10.0.0.1' });

    const unwired = await cli('pam.unwire', { povId }, true);
    expect(unwired.state, JSON.stringify(unwired.error)).toBe('succeeded');
    expect(pra.count() + ps.count() + en.resources.size + cp.containers.size).toBe(0);

    const deployKeys = pra.requests
      .filter((r) => r.status === 201 && r.path.endsWith('/jumpoint'))
      .map((r) => String((r.response as { docker_deploy_key: string }).docker_deploy_key));
    const secrets = [praSecret, psKey, en.token, ...deployKeys, ...[...pra.tokens.values()].flat().map((t) => t.token)];
    for (const f of readdirSync(home, { recursive: true }) as string[]) {
      const p = join(home, f);
      if (!statSync(p).isFile()) continue;
      const bytes = readFileSync(p);
      for (const s of secrets) expect(bytes.includes(Buffer.from(s)), `${s.slice(0, 8)}… in ${f}`).toBe(false);
    }
  }, 120_000);
});
