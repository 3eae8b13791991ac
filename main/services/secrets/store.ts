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
