/**
 * A cluster with an identity provider, for the login suites: the test issuer, the strict double of
 * vm-manager that accepts only tokens that issuer made, and the app's vm.* handlers on a Base with
 * a log file and the given keychain (memory, or the real one under scripts/with-keyring.sh).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { vmHandlers } from '../../main/core/handlers/vm';
import { createLogger } from '../../main/services/log/logger';
import { registeringSecrets, type SecretStore } from '../../main/services/secrets/store';
import { OIDC_ACCOUNT } from '../../main/services/vm/remote';
import { storedTokens } from '../../main/vm-api/oidc';
import { removeHome, testBase, type TestBase } from '../vm/helpers';
import { StrictDouble } from './double';
import { TestIssuer, type IssuerOptions } from './issuer';

export const CLIENT_ID = 'povdesk-desktop';

export interface OidcWorld {
  issuer: TestIssuer;
  double: StrictDouble;
  base: TestBase;
  h: Record<string, (a: never, c: never) => unknown>;
  secrets: SecretStore;
  /** every bearer and refresh token the keychain held during the run */
  seenTokens: Set<string>;
  /** records the keychain's current tokens into seenTokens */
  snapshot(): Promise<void>;
  /** files of the data directory (database, WAL, logs) that contain any seen token */
  leaks(): string[];
  close(): Promise<void>;
}

export async function oidcWorld(secrets: SecretStore | null, opts: Partial<IssuerOptions> = {}): Promise<OidcWorld> {
  const issuer = await new TestIssuer({ clientId: CLIENT_ID, interval: 1, ...opts }).start();
  const double = await new StrictDouble({ tokenOk: (t) => issuer.accepts(t), stepMs: 20 }).start();
  const tb = testBase();
  const log = createLogger({ dir: tb.home, name: 'app' });
  const store = secrets ?? tb.secrets;
  const base: TestBase = { ...tb, log, secrets: registeringSecrets(store, log) };
  const h = vmHandlers(base) as unknown as OidcWorld['h'];
  const seenTokens = new Set<string>();
  return {
    issuer,
    double,
    base,
    h,
    secrets: store,
    seenTokens,
    async snapshot() {
      const raw = await store.get(OIDC_ACCOUNT);
      if (!raw) return;
      const t = storedTokens.parse(JSON.parse(raw));
      seenTokens.add(t.bearer);
      if (t.refreshToken) seenTokens.add(t.refreshToken);
    },
    leaks() {
      base.db.pragma('wal_checkpoint(FULL)');
      const out: string[] = [];
      for (const f of readdirSync(base.home)) {
        const text = readFileSync(join(base.home, f));
        for (const t of seenTokens) if (text.includes(Buffer.from(t))) out.push(f);
      }
      return out;
    },
    async close() {
      await store.delete(OIDC_ACCOUNT);
      await tb.close();
      await double.close();
      await issuer.close();
      removeHome(tb.home);
    },
  };
}
