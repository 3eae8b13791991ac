import type { SettingsView, SkytapSettings } from '../../../shared/contract';
import { AppError } from '../../../shared/contract/errors';
import type { Logger } from '../log/logger';
import type { SecretStore } from '../secrets/store';
import type { Db } from '../store/db';

export const DEFAULT_SKYTAP_URL = 'https://cloud.skytap.com';
export const TOKEN_ACCOUNT = 'skytap-api-token';

/** Environment variables that override stored Skytap settings for this process only. */
export const SKYTAP_ENV = {
  username: 'SKYTAP_USERNAME',
  token: 'SKYTAP_API_TOKEN',
  url: 'SKYTAP_URL',
  projectId: 'SKYTAP_PROJECT_ID',
} as const;

export interface SkytapCredentials {
  url: string;
  username: string;
  token: string | null;
  projectId: string;
}

/** Plain settings in SQLite; the API token in the SecretStore and nowhere else. */
export class SettingsService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretStore,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {
    const envToken = env[SKYTAP_ENV.token];
    if (envToken) log.addSecret(envToken);
  }

  getValue(key: string): string | null {
    const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
    return row ? row.value : null;
  }

  setValue(key: string, value: string): void {
    this.db
      .prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value')
      .run(key, value);
  }

  /** What Skytap calls use: stored values, each overridden by its environment variable. */
  async skytap(): Promise<SkytapCredentials> {
    const stored = {
      username: this.getValue('skytap.username') ?? '',
      url: this.getValue('skytap.url') ?? DEFAULT_SKYTAP_URL,
      projectId: this.getValue('skytap.projectId') ?? '',
    };
    const token = this.env[SKYTAP_ENV.token] || (await this.secrets.get(TOKEN_ACCOUNT));
    if (token) this.log.addSecret(token);
    return {
      username: this.env[SKYTAP_ENV.username] || stored.username,
      url: this.env[SKYTAP_ENV.url] || stored.url,
      projectId: this.env[SKYTAP_ENV.projectId] || stored.projectId,
      token: token || null,
    };
  }

  async saveSkytap(input: { username: string; apiToken?: string; url?: string; projectId?: string }): Promise<void> {
    if (input.apiToken !== undefined && /\s/.test(input.apiToken)) {
      throw new AppError('invalid_request', 'the API token contains white space; paste it again from your Skytap Account page');
    }
    if (input.apiToken !== undefined) {
      this.log.addSecret(input.apiToken);
      // Token first: if the keychain refuses, nothing else changes.
      await this.secrets.set(TOKEN_ACCOUNT, input.apiToken);
    }
    // A field an environment variable overrides shows the variable's value, and the page sends it
    // back: that value belongs to this process only, so the stored one is kept.
    const keep = (field: keyof typeof SKYTAP_ENV) => !!this.env[SKYTAP_ENV[field]];
    const tx = this.db.transaction(() => {
      if (!keep('username')) this.setValue('skytap.username', input.username);
      if (input.url !== undefined && !keep('url')) this.setValue('skytap.url', input.url);
      if (input.projectId !== undefined && !keep('projectId')) this.setValue('skytap.projectId', input.projectId);
    });
    tx();
  }

  async clearSkytapToken(): Promise<void> {
    await this.secrets.delete(TOKEN_ACCOUNT);
  }

  /**
   * Forgets the Skytap account: the token first (if the keychain refuses, nothing else changes),
   * then the username, URL and project id. Environment overrides still apply to this process.
   */
  async removeSkytap(): Promise<void> {
    await this.secrets.delete(TOKEN_ACCOUNT);
    this.db.prepare("DELETE FROM settings WHERE key IN ('skytap.username', 'skytap.url', 'skytap.projectId')").run();
  }

  async view(paths: SettingsView['paths']): Promise<SettingsView> {
    const creds = await this.skytap();
    const fromEnv = Object.values(SKYTAP_ENV).filter((name) => !!this.env[name]);
    const skytap: SkytapSettings = {
      username: creds.username,
      url: creds.url,
      projectId: creds.projectId,
      tokenSet: creds.token !== null,
      fromEnv,
    };
    return { skytap, keyring: this.secrets.status(), paths };
  }
}
