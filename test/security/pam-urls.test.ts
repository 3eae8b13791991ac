/**
 * Issue 33 item 2: the BeyondTrust tenant URLs carry the PRA client secret, the Password Safe API
 * key and run-as password, and the Entitle token, so they follow the credential-URL rule of the
 * Skytap settings (shared/url-policy.ts): https, or http to this machine's loopback only. Checked
 * in the contract (pam.saveTenants) and again where each client is built, so a value stored
 * before the rule is refused when used.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EntitleClient } from '../../main/services/pam/entitle';
import { PasswordSafeClient } from '../../main/services/pam/password-safe';
import { PraClient } from '../../main/services/pam/pra';
import { coreWorld, type CoreWorld } from '../pov/helpers';

let w: CoreWorld;
afterEach(async () => w?.close());

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

/** A POV made through the contract on the emulator: its id. */
async function newPov(name: string): Promise<string> {
  const tpl = [...w.emu.state.templates.values()][0]!;
  const job = await w.jobs.wait((await w.call('pov.create', { templateId: tpl.id, name })).jobId);
  expect(job.state).toBe('succeeded');
  return (await w.call('pov.list', {})).povs.find((p) => p.name === name)!.id;
}

describe('BeyondTrust tenant URLs: https, or http to loopback only', () => {
  it('pam.saveTenants refuses http:// to another host for each product and keeps what was stored', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    const povId = await newPov('Tenants');
    const save = (args: Record<string, unknown>) => outcome(w.call('pam.saveTenants', { povId, ...args } as never));
    const pra = (site: string) => save({ pra: { site, clientId: 'c', clientSecret: 'pra-secret-1' } });
    const ps = (url: string) => save({ passwordSafe: { url, runAs: 'svc', apiKey: 'ps-key-1', runAsPassword: 'ps-pw-1' } });
    const entitle = (url: string) => save({ entitle: { url, token: 'entitle-token-1' } });

    expect(await pra('https://pra.example.com')).toBe('ok');
    expect(await ps('https://ps.example.com')).toBe('ok');
    expect(await entitle('https://api.entitle.example.com')).toBe('ok');
    for (const bad of ['http://pra.example.com', 'http://127.0.0.1.evil.test:8443', 'http://localhost.evil.test']) {
      expect(await pra(bad), bad).toBe('invalid_request');
      expect(await ps(bad), bad).toBe('invalid_request');
      expect(await entitle(bad), bad).toBe('invalid_request');
    }
    const view = await w.call('pam.status', { povId });
    expect(view.tenants.pra?.site).toBe('https://pra.example.com');
    expect(view.tenants.passwordSafe?.url).toBe('https://ps.example.com');
    expect(view.tenants.entitle?.url).toBe('https://api.entitle.example.com');
    // the doubles and a local tenant stay usable
    expect(await pra('http://127.0.0.1:8443')).toBe('ok');
    expect(await ps('http://[::1]:8443')).toBe('ok');
    expect(await entitle('http://localhost:9000')).toBe('ok');
  });

  it('a refused URL says why and what to do', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    const povId = await newPov('Message');
    await expect(w.call('pam.saveTenants', { povId, entitle: { url: 'http://entitle.example.com', token: 't' } })).rejects.toThrow(
      /the Entitle URL must be https:\/\/ .*in clear/,
    );
  });

  it('each client refuses plain http to another host however the URL arrived (an older database)', () => {
    const pra = (site: string) => () => new PraClient({ site, clientId: 'c', clientSecret: 's' });
    const ps = (url: string) => () => new PasswordSafeClient({ url, apiKey: 'k', runAs: 'svc' });
    const entitle = (url: string | null) => () => new EntitleClient({ url, token: 't' });
    expect(pra('http://pra.example.com')).toThrow(/PRA site URL must be https/);
    expect(ps('http://ps.example.com')).toThrow(/Password Safe URL must be https/);
    expect(entitle('http://entitle.example.com')).toThrow(/Entitle URL must be https/);
    expect(pra('http://127.0.0.1:9')).not.toThrow();
    expect(ps('https://ps.example.com')).not.toThrow();
    expect(entitle(null)).not.toThrow(); // Entitle's own https default
  });
});
