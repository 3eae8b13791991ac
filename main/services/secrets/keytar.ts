import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import type { KeyringStatus } from '../../../shared/contract';
import { KEYCHAIN_SERVICE, MemorySecretStore, type SecretStore } from './store';

interface Keytar {
  getPassword(service: string, account: string): Promise<string | null>;
  setPassword(service: string, account: string, password: string): Promise<void>;
  deletePassword(service: string, account: string): Promise<boolean>;
}

const REMEDY: Record<string, string> = {
  linux:
    'Install and unlock a Secret Service keyring (gnome-keyring: `sudo apt-get install gnome-keyring libsecret-1-0`, ' +
    'or KWallet), make sure a D-Bus session is running, then restart POV Desk.',
  darwin: 'Unlock your login keychain in Keychain Access, then restart POV Desk.',
  win32: 'Check that Windows Credential Manager is available for your account, then restart POV Desk.',
};

export class KeytarSecretStore implements SecretStore {
  constructor(
    private readonly keytar: Keytar,
    private readonly service = KEYCHAIN_SERVICE,
  ) {}
  get(account: string) {
    return this.keytar.getPassword(this.service, account);
  }
  set(account: string, value: string) {
    return this.keytar.setPassword(this.service, account, value);
  }
  delete(account: string) {
    return this.keytar.deletePassword(this.service, account);
  }
  status(): KeyringStatus {
    return { backend: 'keytar', available: true, message: 'Secrets are kept in the OS keychain.', remedy: null };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * Picks the keychain when a real set/get/delete round trip works (a D-Bus call can hang on a
 * locked keyring waiting for a prompt, hence the timeout); otherwise secrets stay in memory for
 * this run and the status says why and what to do.
 */
export async function openSecretStore(opts: { timeoutMs?: number; service?: string; keytarModule?: string } = {}): Promise<SecretStore> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  let keytar: Keytar;
  try {
    const require = createRequire(import.meta.url);
    // keytarModule: the copy main/electron/native.ts checked (Node-API: the same for Node and Electron).
    const mod = require(opts.keytarModule ?? 'keytar') as Keytar & { default?: Keytar };
    keytar = mod.default ?? mod;
  } catch (err) {
    return memoryFallback(`the keytar module could not load: ${(err as Error).message}`);
  }
  const store = new KeytarSecretStore(keytar, opts.service);
  const probeAccount = `__probe__${randomBytes(6).toString('hex')}`;
  try {
    await withTimeout(store.set(probeAccount, 'probe'), timeoutMs, 'the OS keyring');
    const back = await withTimeout(store.get(probeAccount), timeoutMs, 'the OS keyring');
    await withTimeout(store.delete(probeAccount), timeoutMs, 'the OS keyring');
    if (back !== 'probe') throw new Error('the keyring returned a different value than was stored');
    return store;
  } catch (err) {
    return memoryFallback((err as Error).message);
  }
}

function memoryFallback(reason: string): SecretStore {
  return new MemorySecretStore({
    backend: 'memory',
    available: false,
    message:
      `No OS keyring answered (${reason}). Your API token is kept in memory for this run only and must be entered again after a ` +
      `restart.`,
    remedy: REMEDY[process.platform] ?? 'Make an OS keyring available, then restart POV Desk.',
  });
}
