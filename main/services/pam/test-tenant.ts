import { AppError } from '../../../shared/contract/errors';
import type { PamProduct, PamTestResult } from '../../../shared/contract/pam';
import { EntitleClient } from './entitle';
import type { HttpOptions } from './http';
import { PasswordSafeClient } from './password-safe';
import { PraClient } from './pra';
import type { ResolvedTenants } from './tenants';

/**
 * The Access panel's Test, one per product, in the style of Settings → Skytap → Test connection:
 * one authenticated read with the SAVED values, five outcomes (ok, not_configured, unauthorized,
 * permission_missing, failed with a reason). A rate limit answers the button instead of waiting.
 */
const NAMES: Record<PamProduct, string> = { pra: 'PRA', passwordSafe: 'Password Safe', entitle: 'Entitle' };

export async function testTenant(product: PamProduct, t: ResolvedTenants, opts: HttpOptions = {}): Promise<PamTestResult> {
  const http: HttpOptions = { ...opts, maxRetries: 1, maxRetryWaitMs: 5_000, timeoutMs: opts.timeoutMs ?? 10_000 };
  const name = NAMES[product];
  const base = { product, reason: null } as const;
  try {
    if (product === 'pra') {
      if (!t.pra) return notConfigured(product, 'the PRA site, API client id and secret');
      const pra = new PraClient(t.pra, http);
      const r = await pra.api('GET', '/jumpoint', { query: { per_page: 5, current_page: 1 } });
      if (r.status === 403)
        return permission(
          product,
          'The API account authenticates but may not read Jumpoints.',
          'Give the API account "Configuration API" access (PRA /login → Management → API Configuration).',
        );
      if (r.status >= 400)
        throw new AppError(r.status === 429 ? 'rate_limited' : 'unavailable', `PRA answered ${r.status}`, { reason: 'server' });
      return {
        ...base,
        outcome: 'ok',
        good: true,
        message: `Connected: the API account reads Jumpoints (${r.headers['x-bt-pagination-total'] ?? '?'} on this site).`,
        remedy: null,
      };
    }
    if (product === 'passwordSafe') {
      if (!t.ps) return notConfigured(product, 'the Password Safe URL and an API key with its run-as user (or an OAuth client)');
      const ps = new PasswordSafeClient(t.ps, http);
      return await ps.session(async () => {
        const r = await ps.call('GET', 'Workgroups');
        if (r.status === 403)
          return permission(
            product,
            'Signed in, but the run-as user may not read workgroups.',
            "Give the run-as user's group Asset Management and Password Safe Account Management permissions.",
          );
        if (r.status >= 400) throw new AppError('unavailable', `Password Safe answered ${r.status}`, { reason: 'server' });
        return {
          ...base,
          outcome: 'ok' as const,
          good: true,
          message: `Connected: signed in and read ${Array.isArray(r.json) ? r.json.length : '?'} workgroup(s).`,
          remedy: null,
        };
      });
    }
    if (!t.entitle) return notConfigured(product, 'the Entitle API token');
    const en = new EntitleClient(t.entitle, http);
    const page = await en.firstIntegrations();
    return {
      ...base,
      outcome: 'ok',
      good: true,
      message: `Connected: ${page.pagination.totalResults} integration(s) visible.`,
      remedy: null,
    };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    switch (err.code) {
      case 'unauthorized':
        return {
          ...base,
          outcome: 'unauthorized',
          good: false,
          message: err.message,
          remedy: `Copy the ${name} credentials again into the Access panel, save, and test again.`,
        };
      case 'forbidden':
        return permission(product, err.message, `Give the ${name} account the API permissions docs/pam.md lists.`);
      case 'cancelled':
        throw err;
      default: {
        const reason =
          err.code === 'rate_limited'
            ? 'rate_limited'
            : (err.detail as { reason?: string } | undefined)?.reason === 'network' || err.code === 'timeout'
              ? 'network'
              : 'server';
        const remedy =
          reason === 'network'
            ? `Check the ${name} URL and the network, then test again.`
            : reason === 'rate_limited'
              ? 'Wait a minute and test again.'
              : `${name} answered with an error; try again later.`;
        return { ...base, outcome: 'failed', good: false, reason, message: err.message, remedy };
      }
    }
  }
}

function notConfigured(product: PamProduct, what: string): PamTestResult {
  return {
    product,
    reason: null,
    outcome: 'not_configured',
    good: false,
    message: `Nothing saved: ${what}.`,
    remedy: 'Enter it in the Access panel and save; Test reads the saved values.',
  };
}

function permission(product: PamProduct, message: string, remedy: string): PamTestResult {
  return { product, reason: null, outcome: 'permission_missing', good: false, message, remedy };
}
