import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import type { skytapMethods } from '../../../shared/contract/skytap';
import { BUDGETS, SkytapClient, type RetryBudget } from '../../services/skytap/client';
import { skytapConfigFrom } from '../../services/skytap/config';
import { testConnection } from '../../services/skytap/testConnection';
import type { Base } from '../base';
import type { CallInfo } from '../dispatch';

type C = typeof skytapMethods;
/** The same shape as HandlerMap<'skytap.*'>, derived from this domain's own contract file. */
export type DomainHandlers<T extends Record<string, { args: z.ZodType; result: z.ZodType }>> = {
  [M in keyof T]: (args: z.output<T[M]['args']>, call: CallInfo) => Promise<z.output<T[M]['result']>>;
};

export const NO_TOKEN_MESSAGE =
  'Save your Skytap username and API token in Settings first (Settings → Skytap; the token is the API security token on your Skytap Account page).';

/** The saved Skytap settings as a client config; no username/token → unauthorized with the remedy. */
export async function savedSkytapConfig(base: Pick<Base, 'settings'>) {
  const creds = await base.settings.skytap();
  if (!creds.token || !creds.username.trim()) throw new AppError('unauthorized', NO_TOKEN_MESSAGE);
  return skytapConfigFrom(creds);
}

/** A client from the SAVED settings with the given retry budget (provisioning by default). */
export async function skytapClientFor(
  base: Pick<Base, 'settings'>,
  opts: { signal?: AbortSignal; budget?: RetryBudget } = {},
): Promise<SkytapClient> {
  const cfg = await savedSkytapConfig(base);
  return new SkytapClient(cfg, {
    budget: opts.budget ?? BUDGETS.provisioning,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

export function skytapHandlers(base: Base): DomainHandlers<C> {
  return {
    'skytap.testConnection': async () => {
      const cfg = await savedSkytapConfig(base);
      const r = await testConnection(cfg);
      return {
        outcome: r.outcome,
        good: r.ok,
        message: r.message,
        remedy: r.remedy,
        templateCount: r.templateCount,
        reason: r.reason,
        scope: r.projectScoped ? 'project' : 'account',
      };
    },
    'skytap.listTemplates': async () => {
      // The provisioning (default) budget: only Test connection asks for one retry (seeds), so a
      // rate-limited account makes the catalogue wait rather than fail the create dialog.
      const client = await skytapClientFor(base);
      const list = await client.listTemplates();
      return {
        templates: list.map((t) => ({
          id: t.id,
          name: t.name,
          description: t.description ?? null,
          vmCount: t.vm_count ?? (t.vms.length || null),
          region: t.region ?? null,
          busy: t.busy,
        })),
      };
    },
  };
}
