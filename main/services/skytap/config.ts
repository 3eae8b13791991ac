import { AppError } from '../../../shared/contract/errors';
import { DEFAULT_SKYTAP_URL, type SkytapConfig } from './client';

/**
 * The client's config from the saved settings (SettingsService.skytap(), which already applies
 * the SKYTAP_* environment overrides). Missing values are refused here, with the remedy, rather
 * than sent to Skytap to earn a 401.
 */
export function skytapConfigFrom(creds: { url: string; username: string; token: string | null; projectId: string }): SkytapConfig {
  const missing = [!creds.username.trim() && 'username', !creds.token && 'API token'].filter(Boolean);
  if (missing.length) {
    throw new AppError(
      'invalid_request',
      `Skytap is not configured: the ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set. ` +
        'Enter them in Settings → Skytap (the token is on your Skytap Account page) and save.',
    );
  }
  const projectId = creds.projectId.trim();
  return {
    baseUrl: creds.url.trim() || DEFAULT_SKYTAP_URL,
    username: creds.username.trim(),
    token: creds.token!,
    ...(projectId ? { projectId } : {}),
  };
}
