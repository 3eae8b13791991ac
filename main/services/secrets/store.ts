import type { KeyringStatus } from '../../../shared/contract';

export const KEYCHAIN_SERVICE = 'povdesk';

/** Secrets live in the OS keychain; nothing here ever writes one to a file. */
export interface SecretStore {
  get(account: string): Promise<string | null>;
  set(account: string, value: string): Promise<void>;
  delete(account: string): Promise<boolean>;
  status(): KeyringStatus;
}

/** Holds secrets for this process only. Used when no keyring answers; never persisted. */
export class MemorySecretStore implements SecretStore {
  private readonly values = new Map<string, string>();
  constructor(private readonly why: KeyringStatus) {}
  async get(account: string) {
    return this.values.get(account) ?? null;
  }
  async set(account: string, value: string) {
    this.values.set(account, value);
  }
  async delete(account: string) {
    return this.values.delete(account);
  }
  status() {
    return this.why;
  }
}

/**
 * The same store, with every value read from it or written to it registered with the logger, so
 * that a token is redacted wherever it later appears (nested fields, error messages, job records,
 * diagnostics) whichever domain holds it.
 */
export function registeringSecrets(store: SecretStore, log: { addSecret(value: string): void }): SecretStore {
  return {
    get: async (account) => {
      const value = await store.get(account);
      if (value) log.addSecret(value);
      return value;
    },
    set: (account, value) => {
      log.addSecret(value);
      return store.set(account, value);
    },
    delete: (account) => store.delete(account),
    status: () => store.status(),
  };
}
