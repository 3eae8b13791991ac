import type { DoctorCheck } from '../../../shared/contract/doctor';
import type { SkytapClient } from '../skytap/client';
import { parseContentRange } from '../skytap/pagination';
import { environmentSchema, templateSchema } from '../skytap/schemas';
import { scheduleSchema } from '../skytap/share-api';
import { check, keysOf, probe } from './checks';

/**
 * Skytap's probes: GETs only (each with keep_idle=true, as every read of the client), one page of
 * one item where a page is enough. What they assume is in docs/skytap.md and docs/share.md.
 */
type Headers = Record<string, string | string[] | undefined>;
const header = (h: Headers, name: string): string | null => {
  const v = h[name.toLowerCase()];
  return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
};

export async function skytapProbes(client: SkytapClient, who: string): Promise<DoctorCheck[]> {
  const seenHeaders: Headers[] = [];
  const get = async (path: string, query: Record<string, string> = {}) => {
    const r = await client.send('GET', path, { query, notFoundIsNull: true, what: path });
    if (r) seenHeaders.push(r.headers);
    return r;
  };
  const base = client.projectId ? `/v2/projects/${client.projectId}` : '/v2';
  const out: DoctorCheck[] = [];

  out.push(
    ...(await probe('skytap.account', who, async () => {
      const r = await get(`${base}/templates`, { count: '1', offset: '0' });
      if (!r)
        return check(
          'skytap.account',
          who,
          'contradicted',
          `${base}/templates answered 404${client.projectId ? ': the Project ID is not one this token sees' : ''}`,
        );
      const items = Array.isArray(r.body) ? r.body : [];
      const range = parseContentRange(header(r.headers, 'content-range') ?? undefined);
      const total = range && range !== 'invalid' ? range.total : items.length;
      return total > 0
        ? check(
            'skytap.account',
            who,
            'confirmed',
            `authenticated; ${total} template(s) ${client.projectId ? `in project ${client.projectId}` : 'in the account'}`,
          )
        : check('skytap.account', who, 'contradicted', 'authenticated, but the catalogue is empty: a POV cannot be created from it');
    })),
  );

  out.push(
    ...(await probe('skytap.paging', who, async () => {
      const first = await get(`${base}/templates`, { count: '1', offset: '0' });
      if (!first) return check('skytap.paging', who, 'unknown', 'the catalogue could not be read (404)');
      const items = Array.isArray(first.body) ? first.body : null;
      const raw = header(first.headers, 'content-range');
      if (!items) return check('skytap.paging', who, 'contradicted', `a page was not a JSON array: ${keysOf(first.body)}`);
      if (items.length > 1)
        return check(
          'skytap.paging',
          who,
          'contradicted',
          `asked for count=1, got ${items.length} items ` +
            `(count is not honoured${raw ? `; Content-Range ${raw}` : ', and no Content-Range'})`,
        );
      if (!raw)
        return check(
          'skytap.paging',
          who,
          'contradicted',
          'no Content-Range header on a page (the client then walks pages until a short one)',
        );
      const range = parseContentRange(raw);
      if (!range || range === 'invalid') return check('skytap.paging', who, 'contradicted', `Content-Range "${raw}" is not items a-b/N`);
      if (range.total < 2)
        return check(
          'skytap.paging',
          who,
          'confirmed',
          `count=1 gave ${items.length} item, Content-Range "${raw}" (one template: the second page was not tried)`,
        );
      const second = await get(`${base}/templates`, { count: '1', offset: '1' });
      const next = Array.isArray(second?.body) ? (second.body as { id?: unknown }[]) : [];
      const firstId = (items[0] as { id?: unknown } | undefined)?.id;
      if (next.length !== 1 || next[0]?.id === firstId) {
        return check(
          'skytap.paging',
          who,
          'contradicted',
          `offset=1 gave ${next.length} item(s)${next[0]?.id === firstId ? ', the same template as offset=0' : ''} ` +
            `(Content-Range "${raw}")`,
        );
      }
      return check('skytap.paging', who, 'confirmed', `count=1 and offset=1 gave one different template each; Content-Range "${raw}"`);
    })),
  );

  if (client.projectId) {
    out.push(
      ...(await probe('skytap.project-shapes', who, async () => {
        const [p, a] = await Promise.all([get(`${base}/templates`, { count: '1' }), get('/v2/templates', { count: '1' })]);
        const pi = Array.isArray(p?.body) ? (p.body[0] as unknown) : undefined;
        const ai = Array.isArray(a?.body) ? (a.body[0] as unknown) : undefined;
        if (pi === undefined || ai === undefined)
          return check('skytap.project-shapes', who, 'unknown', 'one of the two catalogues was empty');
        if (!templateSchema.safeParse(pi).success)
          return check('skytap.project-shapes', who, 'contradicted', `a project template does not read as a template: ${keysOf(pi)}`);
        return check('skytap.project-shapes', who, 'confirmed', 'a project template and an account template read with the same schema');
      })),
    );
  } else {
    out.push(check('skytap.project-shapes', who, 'unknown', 'no Project ID is set, so only the account-wide collections are used'));
  }

  out.push(
    ...(await probe('skytap.project-404', who, async () => {
      const r = await get('/v2/projects/0/templates', { count: '1' }).catch((e: unknown) => {
        if ((e as { detail?: { status?: unknown } }).detail?.status === 404) return null; // the client's "no such project"
        throw e;
      });
      if (r === null) return check('skytap.project-404', who, 'confirmed', 'project 0 answered 404');
      return check(
        'skytap.project-404',
        who,
        'contradicted',
        `project 0 answered ${r.status} with ${Array.isArray(r.body) ? `a list of ${r.body.length}` : keysOf(r.body)}: a wrong ` +
          `Project ID would look like an empty catalogue`,
      );
    })),
  );

  let envBody: Record<string, unknown> | null = null;
  out.push(
    ...(await probe('share.env-listing', who, async () => {
      const r = await get(`${base}/configurations`, { count: '1' });
      const env = Array.isArray(r?.body) ? (r.body[0] as Record<string, unknown> | undefined) : undefined;
      if (!env) return check('share.env-listing', who, 'unknown', 'the account has no environment to look at');
      if (!environmentSchema.safeParse(env).success)
        return check('share.env-listing', who, 'contradicted', `an environment in the listing does not read as one: ${keysOf(env)}`);
      envBody = env;
      const missing = ['publish_sets', 'suspend_on_idle'].filter((k) => !(k in env));
      return missing.length
        ? check(
            'share.env-listing',
            who,
            'contradicted',
            `the listing's environment has no ${missing.join(' or ')} (it has ${keysOf(env)}); the sweep then leaves portals as they were`,
          )
        : check('share.env-listing', who, 'confirmed', 'the listing carries publish_sets and suspend_on_idle');
    })),
  );

  out.push(
    ...(await probe('share.portal-shape', who, async () => {
      const portals = envBody && Array.isArray(envBody.publish_sets) ? (envBody.publish_sets as Record<string, unknown>[]) : [];
      const p = portals[0];
      if (!p) return check('share.portal-shape', who, 'unknown', 'no sharing portal to look at');
      const problems: string[] = [];
      if (typeof p.publish_set_type !== 'string') problems.push(`publish_set_type is ${JSON.stringify(p.publish_set_type)}`);
      const ref = (Array.isArray(p.vms) ? (p.vms[0] as { vm_ref?: unknown } | undefined) : undefined)?.vm_ref;
      if (ref !== undefined && !(typeof ref === 'string' && /\/vms\/[^/]+$/.test(ref))) problems.push(`vm_ref is ${JSON.stringify(ref)}`);
      if (
        p.expiration_date != null &&
        !(typeof p.expiration_date === 'string' && /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/.test(p.expiration_date))
      )
        problems.push(`expiration_date is ${JSON.stringify(p.expiration_date)}`);
      return problems.length
        ? check('share.portal-shape', who, 'contradicted', problems.join('; '))
        : check('share.portal-shape', who, 'confirmed', `portal ${String(p.id)} has the fields as assumed`);
    })),
  );

  out.push(
    ...(await probe('share.schedules', who, async () => {
      const r = await get('/v2/schedules', { count: '5' });
      if (!r) return check('share.schedules', who, 'contradicted', '/v2/schedules answered 404');
      const list = Array.isArray(r.body) ? (r.body as Record<string, unknown>[]) : null;
      if (!list) return check('share.schedules', who, 'contradicted', `/v2/schedules is not a list: ${keysOf(r.body)}`);
      if (list.length === 0) return check('share.schedules', who, 'unknown', 'this user has no schedule to look at');
      for (const s of list) {
        const missing = ['start_at', 'end_at', 'time_zone'].filter((k) => !(k in s));
        if (!('configuration_id' in s) && !('configuration_url' in s)) missing.unshift('configuration_id (or configuration_url)');
        if (missing.length || !scheduleSchema.safeParse(s).success)
          return check(
            'share.schedules',
            who,
            'contradicted',
            `schedule ${String(s.id)} has no ${missing.join(', ') || 'readable fields'} (it has ${keysOf(s)})`,
          );
      }
      return check('share.schedules', who, 'confirmed', `${list.length} schedule(s), each with its environment, times and zone`);
    })),
  );

  const budget = [
    ...new Set(
      seenHeaders.flatMap((h) =>
        Object.keys(h)
          .filter((k) => /rate-?limit/i.test(k))
          .map((k) => `${k}: ${header(h, k)}`),
      ),
    ),
  ];
  out.push(
    seenHeaders.length === 0
      ? check('skytap.rate-limit-headers', who, 'unknown', 'no answer was read')
      : budget.length
        ? check(
            'skytap.rate-limit-headers',
            who,
            'contradicted',
            `answers carry ${budget.slice(0, 4).join('; ')} (the client could pace on them)`,
          )
        : check('skytap.rate-limit-headers', who, 'confirmed', `no rate-limit header on ${seenHeaders.length} answer(s)`),
  );
  return out;
}
