import { AppError } from '../../../shared/contract/errors';
import { BUDGETS, SkytapClient, type RetryBudget } from './client';
import { skytapConfigFrom } from './config';
import type { SkytapCredentials } from '../settings/settings';

export const NO_TOKEN_MESSAGE =
  'Save your Skytap username and API token in Settings first (Settings → Skytap; the token is the API security token on your ' +
  'Skytap Account page).';

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

  /**
   * Settings → Test connection: the form's values over the saved ones (a field left out or blank
   * is the saved value, as Save treats it). The saved token only goes to the saved URL: testing
   * another URL needs the token typed in, so no form can send the stored token elsewhere.
   */
  async configWith(form: {
    username?: string | undefined;
    apiToken?: string | undefined;
    url?: string | undefined;
    projectId?: string | undefined;
  }) {
    const saved = await this.settings.skytap();
    const url = form.url?.trim() || saved.url;
    const typed = form.apiToken?.trim() || null;
    if (!typed && url.replace(/\/+$/, '') !== saved.url.replace(/\/+$/, '') && saved.token) {
      throw new AppError(
        'invalid_request',
        `The saved API token is only sent to the saved URL (${saved.url}); type the token into the form to test ${url}.`,
      );
    }
    const creds = {
      username: form.username?.trim() || saved.username,
      url,
      projectId: form.projectId !== undefined ? form.projectId.trim() : saved.projectId,
      token: typed ?? saved.token,
    };
    if (!creds.token || !creds.username.trim()) {
      const missing = [!creds.username.trim() && 'username', !creds.token && 'API token'].filter(Boolean).join(' and ');
      throw new AppError(
        'invalid_request',
        `Enter the Skytap ${missing} above to test (the token is the API security token on your Skytap Account page).`,
      );
    }
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
