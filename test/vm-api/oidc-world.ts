/**
 * A cluster with an identity provider, for the login suites: oidc-provider over https with a
 * private CA (./issuer), the strict double of vm-manager that accepts only id_tokens that issuer
 * signed, and the real core (its log file under <home>/logs, its Dispatcher) with the given
 * keychain (memory, or the real one under scripts/with-keyring.sh).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SecretStore } from '../../main/services/secrets/store';
import { OIDC_ACCOUNT } from '../../main/services/vm/remote';
import { storedTokens } from '../../main/vm-api/oidc';
import { memorySecrets, testCore, type TestCore } from '../support/core';
import { StrictDouble } from './double';
import { TestIssuer, type IssuerOptions } from './issuer';

export const CLIENT_ID = 'povdesk-desktop';

export interface OidcWorld {
  issuer: TestIssuer;
  double: StrictDouble;
  /** the core; `t.call` goes through its Dispatcher, `t.restart()` is the next app launch */
  t: TestCore;
  /** the keychain the core was given */
  secrets: SecretStore;
  /** every bearer and refresh token the keychain held during the run */
  seenTokens: Set<string>;
  /** vm.setConnection to the double with the OIDC login (the issuer's CA as the CA bundle) */
  connect(): Promise<unknown>;
  /** vm.login, the person approves, the job's end */
  login(): Promise<{ error: unknown }>;
  /** records the keychain's current tokens into seenTokens */
  snapshot(): Promise<void>;
  /** files under the data directory (database, WAL, logs/, owner files) that contain any seen token */
  leaks(): string[];
  close(): Promise<void>;
}

export async function oidcWorld(secrets: SecretStore | null, opts: Partial<IssuerOptions> = {}): Promise<OidcWorld> {
  const issuer = await new TestIssuer({ clientId: CLIENT_ID, interval: 1, ...opts }).start();
  const double = await new StrictDouble({ tokenOk: (t) => issuer.accepts(t), stepMs: 20 }).start();
  const store = secrets ?? memorySecrets();
  const t = await testCore({ secrets: store });
  const seenTokens = new Set<string>();
  return {
    issuer,
    double,
    t,
    secrets: store,
    seenTokens,
    connect: () =>
      t.call('vm.setConnection', {
        mode: 'remote',
        url: double.url,
        auth: 'oidc',
        oidcIssuer: issuer.url,
        oidcClientId: CLIENT_ID,
        caBundle: issuer.caFile,
      }),
    async login() {
      const login = await t.call('vm.login', {});
      await issuer.approve(login.userCode);
      return t.jobs.wait(login.jobId);
    },
    async snapshot() {
      // the store itself, not the core's registering view of it: reading here must not teach the log a token
      const raw = await store.get(OIDC_ACCOUNT);
      if (!raw) return;
      const tokens = storedTokens.parse(JSON.parse(raw));
      seenTokens.add(tokens.bearer);
      if (tokens.refreshToken) seenTokens.add(tokens.refreshToken);
    },
    leaks() {
      t.db.pragma('wal_checkpoint(FULL)');
      const files = (readdirSync(t.home, { recursive: true }) as string[]).filter((f) => statSync(join(t.home, f)).isFile());
      if (files.length < 2) throw new Error(`expected the database and a log under ${t.home}, found ${files.join(', ') || 'nothing'}`);
      const out: string[] = [];
      for (const f of files) {
        const text = readFileSync(join(t.home, f));
        for (const tok of seenTokens) if (text.includes(Buffer.from(tok))) out.push(f);
      }
      return out;
    },
    async close() {
      await store.delete(OIDC_ACCOUNT);
      await t.close();
      await double.close();
      await issuer.close();
    },
  };
}
