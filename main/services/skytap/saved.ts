import { AppError } from '../../../shared/contract/errors';
import { BUDGETS, SkytapClient, type RetryBudget } from './client';
import { skytapConfigFrom } from './config';
import type { SkytapCredentials } from '../settings/settings';

export const NO_TOKEN_MESSAGE =
  'Save your Skytap username and API token in Settings first (Settings → Skytap; the token is the API security token on your Skytap Account page).';

/** Where the saved Skytap settings come from (SettingsService). */
export interface SkytapCredentialSource {
  skytap(): Promise<SkytapCredentials>;
}

/** Skytap clients built from the SAVED settings, read at each use (a save applies at once). */
export class SavedSkytap {
  constructor(private readonly settings: SkytapCredentialSource) {}

  /** The saved settings as a client config; no username/token → unauthorized with the remedy. */
  async config() {
    const creds = await this.settings.skytap();
    if (!creds.token || !creds.username.trim()) throw new AppError('unauthorized', NO_TOKEN_MESSAGE);
    return skytapConfigFrom(creds);
  }

  /** A client with the given retry budget (provisioning by default). */
  async client(opts: { signal?: AbortSignal; budget?: RetryBudget } = {}): Promise<SkytapClient> {
    return new SkytapClient(await this.config(), {
      budget: opts.budget ?? BUDGETS.provisioning,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }
}
