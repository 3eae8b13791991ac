import type { DoctorCheck, DoctorResult } from '../../../shared/contract/doctor';

/**
 * The named assumptions `povdesk doctor` checks, each where the docs write it down (the docs cite
 * the same names). A probe answers one of them for one account: confirmed, contradicted with what
 * it saw, or could not tell and why.
 */
export const ASSUMPTIONS = {
  'skytap.account': {
    area: 'skytap',
    doc: 'docs/skytap.md, Test connection',
    text: 'The saved username and API token authenticate and the catalogue (project-scoped when a Project ID is set) has templates.',
  },
  'skytap.paging': {
    area: 'skytap',
    doc: 'docs/skytap.md, Unconfirmed assumptions 2 and 5',
    text: 'Collections honour count/offset and send Content-Range (items a-b/N, the unit optional).',
  },
  'skytap.project-shapes': {
    area: 'skytap',
    doc: 'docs/skytap.md, Unconfirmed assumptions 1',
    text: '/v2/projects/{id}/templates returns the same object shapes as the account-wide /v2/templates.',
  },
  'skytap.project-404': {
    area: 'skytap',
    doc: 'docs/skytap.md, Unconfirmed assumptions 3',
    text: 'A project id the token cannot see answers 404, not an empty list.',
  },
  'skytap.rate-limit-headers': {
    area: 'skytap',
    doc: 'docs/skytap.md, What the client does (423/429 and Retry-After)',
    text: 'Skytap announces no request budget in headers; the client paces on 423/429 and Retry-After.',
  },
  'share.env-listing': {
    area: 'share',
    doc: 'docs/share.md, What only a live Skytap account can confirm (environment body)',
    text: 'An environment in the collection listing carries publish_sets and suspend_on_idle.',
  },
  'share.portal-shape': {
    area: 'share',
    doc: 'docs/share.md, What only a live Skytap account can confirm (portal body)',
    text: 'A sharing portal has publish_set_type, vms[].vm_ref as <base>/vms/<id>, and expiration_date as YYYY/MM/DD HH:mm:ss.',
  },
  'share.schedules': {
    area: 'share',
    doc: 'docs/share.md, What only a live Skytap account can confirm (schedules)',
    text: 'GET /v2/schedules lists schedules with configuration_id (or configuration_url), start_at, end_at and time_zone.',
  },
  'pam.pra-token': {
    area: 'pam',
    doc: 'docs/pam.md, PRA Configuration API (token)',
    text: 'POST /oauth2/token (Basic client id:secret, client_credentials) answers {access_token, token_type: Bearer, expires_in}.',
  },
  'pam.pra-reads': {
    area: 'pam',
    doc: 'docs/pam.md, PRA Configuration API (paging, rate limit)',
    text: 'GET /jumpoint and /jump-group answer arrays of {id, name, code_name} with X-BT-Pagination-* and X-RateLimit-* headers.',
  },
  'pam.pra-node': {
    area: 'pam',
    doc: 'docs/pam.md, Assumptions 4',
    text: 'GET /jumpoint/{id}/node answers one JumpointNode (the schema) or a list of them (the text); the client reads either.',
  },
  'pam.ps-session': {
    area: 'pam',
    doc: 'docs/pam.md, Password Safe (Auth)',
    text: 'Password Safe signs in with Auth/SignAppIn (a session cookie) and out with Auth/Signout.',
  },
  'pam.ps-platforms': {
    area: 'pam',
    doc: 'docs/pam.md, Assumptions 6',
    text: 'GET Platforms lists platforms named Linux and Windows (matched by name).',
  },
  'pam.entitle-envelope': {
    area: 'pam',
    doc: 'docs/pam.md, Entitle API',
    text: 'Entitle lists answer {result: [...], pagination: {page, perPage, totalResults, totalPages}}.',
  },
  'pam.entitle-pra': {
    area: 'pam',
    doc: 'docs/pam.md, Assumptions 7',
    text: "Entitle's PRA integration is recognised by its application name (Privileged Remote Access).",
  },
  'vm.remote-host': {
    area: 'vm-manager',
    doc: 'docs/lab-platforms.md, A remote vm-manager',
    text: "A remote vm-manager answers GET /api/v1/host in giantswarm's document's shape.",
  },
  'vm.remote-document': {
    area: 'vm-manager',
    doc: 'docs/vm-manager-api.md, Routes',
    text: "The remote vm-manager's GET /api/v1/openapi.yaml has every operation the client calls, at the same paths.",
  },
  'control-plane.spire': {
    area: 'control-plane',
    doc: 'docs/control-plane.md, GET /v1/spire',
    text: 'The control plane answers GET /v1/spire with the saved bearer token: {enabled: false} or its SPIRE settings.',
  },
} as const satisfies Record<string, { area: DoctorCheck['area']; doc: string; text: string }>;

export type AssumptionId = keyof typeof ASSUMPTIONS;

export function check(id: AssumptionId, subject: string, result: DoctorResult, seen: string): DoctorCheck {
  const a = ASSUMPTIONS[id];
  return { id, area: a.area, subject, assumption: a.text, doc: a.doc, result, seen };
}

/** Runs one probe; a thrown error is "could not tell" with its message (a probe never fails the report). */
export async function probe(id: AssumptionId, subject: string, fn: () => Promise<DoctorCheck | DoctorCheck[]>): Promise<DoctorCheck[]> {
  try {
    const r = await fn();
    return Array.isArray(r) ? r : [r];
  } catch (e) {
    return [check(id, subject, 'unknown', `the read failed: ${(e as Error).message}`)];
  }
}

/** The keys an object has, for "what differed" messages. */
export const keysOf = (v: unknown): string =>
  v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v).sort().join(', ') : (JSON.stringify(v)?.slice(0, 80) ?? 'nothing');
