import type { DoctorCheck } from '../../../shared/contract/doctor';
import { EntitleClient, PRA_APPLICATION } from '../pam/entitle';
import { send, type HttpOptions } from '../pam/http';
import { PasswordSafeClient } from '../pam/password-safe';
import type { PraTenant } from '../pam/pra';
import type { ResolvedTenants } from '../pam/tenants';
import { check, keysOf, probe } from './checks';

/**
 * BeyondTrust's probes for one POV's saved tenants (docs/pam.md). Reads only; the two POSTs are
 * sign-ins (PRA's token, Password Safe's SignAppIn and its Signout), which change nothing there.
 */
export async function pamProbes(t: ResolvedTenants, http: HttpOptions): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  if (t.pra) out.push(...(await praProbes(t.pra, http)));
  if (t.ps) {
    const ps = new PasswordSafeClient(t.ps, http);
    const who = `Password Safe ${t.ps.url}`;
    let platforms: unknown = null;
    out.push(
      ...(await probe('pam.ps-session', who, async () => {
        await ps.session(async () => {
          platforms = (await ps.call('GET', 'Platforms')).json;
        });
        return check('pam.ps-session', who, 'confirmed', 'SignAppIn set a session cookie; Signout ended it');
      })),
    );
    out.push(
      ...(await probe('pam.ps-platforms', who, async () => {
        if (!Array.isArray(platforms))
          return check(
            'pam.ps-platforms',
            who,
            platforms === null ? 'unknown' : 'contradicted',
            platforms === null ? 'Platforms was not read' : `Platforms is not a list: ${keysOf(platforms)}`,
          );
        const names = (platforms as { Name?: unknown }[]).map((p) => String(p.Name));
        const missing = ['Linux', 'Windows'].filter((n) => !names.includes(n));
        return missing.length
          ? check(
              'pam.ps-platforms',
              who,
              'contradicted',
              `no platform named ${missing.join(' or ')}; the platforms are ${names.slice(0, 12).join(', ')}`,
            )
          : check('pam.ps-platforms', who, 'confirmed', `Linux and Windows among ${names.length} platforms`);
      })),
    );
  }
  if (t.entitle) {
    const en = new EntitleClient(t.entitle, http);
    const who = `Entitle ${t.entitle.url ?? 'https://api.entitle.io'}`;
    type Integration = { application?: { name?: unknown } };
    const read: { integrations: Integration[] | null } = { integrations: null };
    out.push(
      ...(await probe('pam.entitle-envelope', who, async () => {
        const r = await en.call('GET', '/integrations', { query: { page: 1, perPage: 100 } });
        const body = r.json as { result?: unknown; pagination?: Record<string, unknown> } | null;
        const pg = body?.pagination;
        const missing = ['page', 'perPage', 'totalResults', 'totalPages'].filter((k) => typeof pg?.[k] !== 'number');
        if (r.status >= 400) return check('pam.entitle-envelope', who, 'unknown', `GET /integrations answered ${r.status}`);
        if (!Array.isArray(body?.result) || missing.length)
          return check(
            'pam.entitle-envelope',
            who,
            'contradicted',
            `GET /integrations answered ${keysOf(body)}${pg ? ` with pagination ${keysOf(pg)}` : ''}`,
          );
        read.integrations = body.result as Integration[];
        return check('pam.entitle-envelope', who, 'confirmed', `{result, pagination} with ${String(pg!.totalResults)} integration(s)`);
      })),
    );
    const apps = read.integrations?.map((i) => String(i.application?.name ?? '')) ?? null;
    out.push(
      apps === null
        ? check('pam.entitle-pra', who, 'unknown', 'the integrations were not read')
        : apps.some((a) => PRA_APPLICATION.test(a))
          ? check('pam.entitle-pra', who, 'confirmed', 'an integration whose application is PRA')
          : check(
              'pam.entitle-pra',
              who,
              'unknown',
              `no integration's application names PRA (applications: ${[...new Set(apps)].slice(0, 8).join(', ') || 'none'}); add ` +
                `Entitle's PRA integration, or tell us its name`,
            ),
    );
  }
  return out;
}

async function praProbes(tenant: PraTenant, http: HttpOptions): Promise<DoctorCheck[]> {
  const site = tenant.site.replace(/\/+$/, '');
  const who = `PRA ${site}`;
  const out: DoctorCheck[] = [];
  let token: string | null = null;
  out.push(
    ...(await probe('pam.pra-token', who, async () => {
      const basic = Buffer.from(`${tenant.clientId}:${tenant.clientSecret}`).toString('base64');
      const r = await send(
        'PRA',
        {
          method: 'POST',
          url: `${site}/oauth2/token`,
          headers: { authorization: `Basic ${basic}` },
          form: { grant_type: 'client_credentials' },
        },
        http,
      );
      const b = r.json as Record<string, unknown> | null;
      if (r.status !== 200)
        return check(
          'pam.pra-token',
          who,
          'unknown',
          `the token request answered ${r.status}: check the API account in the POV's Access panel`,
        );
      const wrong = [
        typeof b?.access_token === 'string' ? null : 'access_token',
        String(b?.token_type).toLowerCase() === 'bearer' ? null : `token_type ${JSON.stringify(b?.token_type)}`,
        typeof b?.expires_in === 'number' ? null : `expires_in ${JSON.stringify(b?.expires_in)}`,
      ].filter(Boolean);
      if (wrong.length)
        return check('pam.pra-token', who, 'contradicted', `the token answer differs: ${wrong.join(', ')} (it has ${keysOf(b)})`);
      token = b!.access_token as string;
      return check('pam.pra-token', who, 'confirmed', `a Bearer token for ${String(b!.expires_in)} s`);
    })),
  );
  if (!token) return [...out, check('pam.pra-reads', who, 'unknown', 'no token'), check('pam.pra-node', who, 'unknown', 'no token')];
  const get = (path: string, query: Record<string, string> = {}) =>
    send(
      'PRA',
      {
        method: 'GET',
        url: `${site}/api/config/v1${path}${Object.keys(query).length ? `?${new URLSearchParams(query).toString()}` : ''}`,
        headers: { authorization: `Bearer ${token}` },
      },
      http,
    );
  let firstJumpoint: number | null = null;
  out.push(
    ...(await probe('pam.pra-reads', who, async () => {
      const problems: string[] = [];
      const empty: string[] = [];
      for (const path of ['/jumpoint', '/jump-group']) {
        const r = await get(path, { per_page: '5', current_page: '1' });
        if (r.status >= 400) return check('pam.pra-reads', who, 'unknown', `GET ${path} answered ${r.status}`);
        if (!Array.isArray(r.json)) {
          problems.push(`GET ${path} is not a list (${keysOf(r.json)})`);
          continue;
        }
        const item = r.json[0] as Record<string, unknown> | undefined;
        if (!item) empty.push(path);
        if (item) {
          const missing = ['id', 'name', 'code_name'].filter((k) => !(k in item));
          if (missing.length) problems.push(`a ${path.slice(1)} has no ${missing.join(', ')} (it has ${keysOf(item)})`);
          if (path === '/jumpoint' && typeof item.id === 'number') firstJumpoint = item.id;
        }
        const absent = ['x-bt-pagination-total', 'x-ratelimit-limit', 'x-ratelimit-remaining'].filter((h) => r.headers[h] === undefined);
        if (absent.length) problems.push(`GET ${path} has no ${absent.join(', ')} header`);
      }
      if (problems.length) return check('pam.pra-reads', who, 'contradicted', problems.join('; '));
      return check(
        'pam.pra-reads',
        who,
        'confirmed',
        `Jumpoints and Jump Groups read with their paging and rate-limit ` +
          `headers${empty.length ? ` (${empty.join(' and ')} empty: their fields were not seen)` : ''}`,
      );
    })),
  );
  out.push(
    ...(await probe('pam.pra-node', who, async () => {
      if (firstJumpoint === null) return check('pam.pra-node', who, 'unknown', 'no Jumpoint to look at');
      const r = await get(`/jumpoint/${firstJumpoint}/node`);
      if (r.status === 404) return check('pam.pra-node', who, 'unknown', `Jumpoint ${firstJumpoint} has no node yet (404)`);
      if (Array.isArray(r.json))
        return check('pam.pra-node', who, 'confirmed', `a list of ${r.json.length} node(s), as the spec's text says`);
      if (r.json && typeof r.json === 'object' && 'hostname' in r.json)
        return check('pam.pra-node', who, 'confirmed', "one node object, as the spec's schema says");
      return check('pam.pra-node', who, 'contradicted', `neither a node nor a list: ${keysOf(r.json)}`);
    })),
  );
  return out;
}
