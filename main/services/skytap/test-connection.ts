import { AppError } from '../../../shared/contract/errors';
import { BUDGETS, PAGE_SIZE, SkytapClient, type SkytapClientOptions, type SkytapConfig } from './client';

/**
 * Settings → Skytap → Test connection: one page of GET /v2/templates (project-scoped when a
 * Project ID is set) with the one-retry budget. That single read answers whether the token
 * authenticates, what the account can see, and whether the Project ID is real. Callers pass the
 * SAVED settings, never the form.
 */
export type ConnectionOutcome = 'ok' | 'unauthorized' | 'project_not_found' | 'no_templates' | 'failed';
export type ConnectionFailure = 'rate_limited' | 'network' | 'server';

export interface ConnectionResult {
  outcome: ConnectionOutcome;
  /** Green only for 'ok'; no_templates is deliberately red. */
  ok: boolean;
  message: string;
  remedy: string | null;
  /** Templates visible (the collection's total) when the read succeeded. */
  templateCount: number | null;
  reason: ConnectionFailure | null;
  projectScoped: boolean;
}

export async function testConnection(cfg: SkytapConfig, opts: Omit<SkytapClientOptions, 'budget'> = {}): Promise<ConnectionResult> {
  const projectScoped = (cfg.projectId?.trim() ?? '') !== '';
  const base = { projectScoped, templateCount: null, reason: null } as const;
  let client: SkytapClient;
  try {
    client = new SkytapClient(cfg, { ...opts, budget: BUDGETS.testConnection });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    if (/project id/i.test(err.message)) {
      return {
        ...base,
        outcome: 'project_not_found',
        ok: false,
        message: err.message,
        remedy: "Skytap project ids are numbers: copy the one in the project's URL into Settings → Skytap, or clear it.",
      };
    }
    // A URL Skytap cannot be reached at: the same remedy as a network failure.
    return failed(
      base,
      'network',
      err.message,
      'Fix the Skytap URL in Settings → Skytap (default https://cloud.skytap.com), save, then test again.',
    );
  }
  try {
    const page = await client.listTemplatesPage(PAGE_SIZE, 0);
    const where = projectScoped ? `in project ${cfg.projectId!.trim()}` : 'in this account';
    if (page.total === 0) {
      return {
        ...base,
        templateCount: 0,
        outcome: 'no_templates',
        ok: false,
        message: `Connected, but no templates are visible ${where}.`,
        remedy:
          'A POV cannot be created from an empty catalogue. Share templates with this user' +
          (projectScoped ? ', add them to the project,' : '') +
          ' or check the Project ID.',
      };
    }
    return {
      ...base,
      templateCount: page.total,
      outcome: 'ok',
      ok: true,
      message: `Connected: ${page.total} template${page.total === 1 ? '' : 's'} visible ${where}.`,
      remedy: null,
    };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    switch (err.code) {
      case 'unauthorized':
        return {
          ...base,
          outcome: 'unauthorized',
          ok: false,
          message: 'Skytap rejected the username and token (401).',
          remedy:
            'Skytap wants the API security token from your Account page, not the account password. ' +
            'Copy it into Settings → Skytap, check the username, save, and test again.',
        };
      case 'not_found':
        if (projectScoped) {
          return {
            ...base,
            outcome: 'project_not_found',
            ok: false,
            message: `Skytap has no project ${cfg.projectId!.trim()} visible to this token (404).`,
            remedy:
              "Check the Project ID (the number in the project's URL) and that this user is a member of the project; " +
              'or clear the Project ID to use the whole account.',
          };
        }
        return failed(base, 'server', err.message, 'Check the Skytap URL in Settings → Skytap (default https://cloud.skytap.com).');
      case 'rate_limited':
        return failed(
          base,
          'rate_limited',
          'Skytap is rate limiting this account right now; the connection itself may be fine.',
          'Wait a few minutes and test again.',
        );
      case 'unavailable': {
        const reason = (err.detail as { reason?: unknown } | undefined)?.reason === 'network' ? 'network' : 'server';
        return failed(
          base,
          reason,
          err.message,
          reason === 'network'
            ? 'Check the network and the Skytap URL in Settings → Skytap, then test again.'
            : 'Skytap answered with an error; try again later and check status.skytap.com.',
        );
      }
      case 'cancelled':
        throw err;
      default:
        return failed(base, 'server', err.message, 'Test again; if it persists, report it with this message.');
    }
  }
}

function failed(
  base: { projectScoped: boolean; templateCount: null; reason: null },
  reason: ConnectionFailure,
  message: string,
  remedy: string,
): ConnectionResult {
  return { ...base, outcome: 'failed', ok: false, reason, message, remedy };
}
