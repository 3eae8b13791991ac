import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import type { SkytapClient } from './client';

/**
 * Sharing portals (Skytap's "publish sets") and schedules. Every request goes through
 * SkytapClient.send (http.ts), so keep_idle, the retry budget and the error mapping are the same
 * as everywhere else. The field names and formats are from
 * /work/shared/research/skytap-api.md §6–7; what only a live account can confirm is
 * listed in docs/share.md and marked UNCONFIRMED here.
 */

const idish = lazySchema(() => z.union([z.string().min(1), z.number()]).transform((v) => String(v)));
const optText = lazySchema(() =>
  z
    .string()
    .nullish()
    .transform((v) => v ?? null),
);
const optNum = lazySchema(() =>
  z
    .number()
    .nullish()
    .transform((v) => v ?? null),
);

export const PORTAL_ACCESS = ['use', 'run_and_use'] as const;
export type PortalAccess = (typeof PORTAL_ACCESS)[number];

export const publishSetSchema = lazySchema(() =>
  z.looseObject({
    id: idish,
    name: optText,
    url: optText,
    /** The link a customer opens (https://cloud.skytap.com/vms/<hash>/desktops). */
    desktops_url: optText,
    /** Never readable back: asterisks or null. */
    password: optText,
    expiration_date: optText,
    expiration_date_tz: optText,
    runtime_limit: optNum,
    runtime_left_in_seconds: optNum,
    publish_set_type: optText,
    vms: z
      .array(z.looseObject({ vm_ref: optText, access: optText, id: idish.nullish() }))
      .nullish()
      .transform((v) => v ?? []),
  }),
);
export type PublishSet = z.infer<typeof publishSetSchema>;

export const scheduleSchema = lazySchema(() =>
  z.looseObject({
    id: idish,
    title: optText,
    configuration_id: idish.nullish().transform((v) => v ?? null),
    configuration_url: optText,
    start_at: optText,
    end_at: optText,
    time_zone: optText,
    delete_at_end: z
      .boolean()
      .nullish()
      .transform((v) => v ?? false),
  }),
);
export type Schedule = z.infer<typeof scheduleSchema>;

/** The environment a schedule acts on: configuration_id, else the tail of configuration_url. */
export function scheduleEnvId(s: Schedule): string | null {
  if (s.configuration_id) return s.configuration_id;
  const m = s.configuration_url ? /\/configurations\/([^/.]+)/.exec(s.configuration_url) : null;
  return m ? m[1]! : null;
}

/** `publish_sets` as carried in an environment body (null when the body has no such field). */
export function portalsInEnvironment(env: Record<string, unknown>): PublishSet[] | null {
  if (!Array.isArray(env.publish_sets)) return null;
  const out: PublishSet[] = [];
  for (const p of env.publish_sets) {
    const r = publishSetSchema.safeParse(p);
    if (r.success) out.push(r.data);
  }
  return out;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** Skytap's date format, in UTC: `YYYY/MM/dd HH:mm:ss +0000`. */
export function skytapTime(d: Date): string {
  return `${skytapLocal(d)} +0000`;
}

/** The same without the offset, for fields that carry their zone separately (expiration_date_tz). */
export function skytapLocal(d: Date): string {
  return (
    `${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  );
}

/** Reads `YYYY/MM/dd HH:mm:ss [±zzzz]` (UTC when no offset) or ISO-8601; null when unreadable. */
export function parseSkytapTime(v: string | null): Date | null {
  if (!v) return null;
  const m = /^(\d{4})[/-](\d{2})[/-](\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?\s*(?:([+-])(\d{2}):?(\d{2})|Z|UTC)?$/.exec(v.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, sign, oh, om] = m;
  let t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? 0));
  if (sign) t -= (sign === '+' ? 1 : -1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return Number.isNaN(t) ? null : new Date(t);
}

function validId(id: string, what: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id))
    throw new AppError('invalid_request', `Not a valid Skytap ${what} id: ${JSON.stringify(id).slice(0, 80)}.`);
  return id;
}

export interface CreatePortalRequest {
  name: string;
  vmIds: string[];
  access: PortalAccess;
  password: string;
  expiresAt: Date;
  runtimeLimitMinutes?: number | null;
}

export interface CreateScheduleRequest {
  title: string;
  envId: string;
  startAt: Date;
  endAt: Date;
}

/** The endpoints the share and auto-delete services call. */
export interface ShareSkytapApi {
  baseUrl: string;
  listPublishSets(envId: string): Promise<PublishSet[]>;
  createPublishSet(envId: string, req: CreatePortalRequest): Promise<PublishSet>;
  updatePublishSet(envId: string, psId: string, patch: { password?: string; expiresAt?: Date }): Promise<PublishSet>;
  deletePublishSet(envId: string, psId: string): Promise<'deleted' | 'already_gone'>;
  listSchedules(): Promise<Schedule[]>;
  createSchedule(req: CreateScheduleRequest): Promise<Schedule>;
  updateScheduleEnd(id: string, endAt: Date): Promise<Schedule>;
}

/** The body of a sharing portal; the password is never logged (the client logs no bodies). */
export function portalBody(baseUrl: string, req: CreatePortalRequest): Record<string, unknown> {
  if (req.password.length < 20) throw new AppError('internal', 'A sharing portal password must be at least 20 characters.');
  return {
    name: req.name,
    publish_set_type: 'single_url',
    // UNCONFIRMED: vm_ref as the v1 VM URL (VAG, PS and JEN send it this way).
    vms: req.vmIds.map((id) => ({ vm_ref: `${baseUrl}/vms/${validId(id, 'VM')}`, access: req.access })),
    password: req.password,
    // UNCONFIRMED: the expiration_date format; sent like Skytap's own dates, zone apart.
    expiration_date: skytapLocal(req.expiresAt),
    expiration_date_tz: 'UTC',
    ...(req.runtimeLimitMinutes ? { runtime_limit: req.runtimeLimitMinutes } : {}),
  };
}

export function shareApi(client: SkytapClient): ShareSkytapApi {
  const portals = (envId: string) => `/v2/configurations/${validId(envId, 'environment')}/publish_sets`;
  const what = (envId: string) => `environment ${envId}`;
  return {
    baseUrl: client.baseUrl,
    async listPublishSets(envId) {
      return client.walk(portals(envId), z.array(publishSetSchema), what(envId));
    },
    async createPublishSet(envId, req) {
      const path = `${portals(envId)}.json`;
      const r = await client.sendOk('POST', path, { body: portalBody(client.baseUrl, req), what: what(envId) });
      return client.parse(r.body, publishSetSchema, `POST ${path}`);
    },
    async updatePublishSet(envId, psId, patch) {
      const path = `${portals(envId)}/${validId(psId, 'sharing portal')}.json`;
      const body: Record<string, unknown> = {};
      if (patch.password !== undefined) body.password = patch.password;
      if (patch.expiresAt !== undefined) {
        body.expiration_date = skytapLocal(patch.expiresAt);
        body.expiration_date_tz = 'UTC';
      }
      const r = await client.sendOk('PUT', path, { body, what: `sharing portal ${psId} of ${what(envId)}` });
      return client.parse(r.body, publishSetSchema, `PUT ${path}`);
    },
    async deletePublishSet(envId, psId) {
      const path = `${portals(envId)}/${validId(psId, 'sharing portal')}.json`;
      const r = await client.send('DELETE', path, { notFoundIsNull: true });
      return r === null ? 'already_gone' : 'deleted';
    },
    async listSchedules() {
      return client.walk('/v2/schedules', z.array(scheduleSchema));
    },
    async createSchedule(req) {
      const body = {
        title: req.title,
        configuration_id: validId(req.envId, 'environment'),
        start_at: skytapTime(req.startAt),
        end_at: skytapTime(req.endAt),
        time_zone: 'UTC',
        // UNCONFIRMED: that a schedule with no actions is accepted; it exists only to delete at its end.
        actions: [],
        notify_user: true,
        delete_at_end: true,
      };
      const r = await client.sendOk('POST', '/v2/schedules.json', { body });
      return client.parse(r.body, scheduleSchema, 'POST /v2/schedules.json');
    },
    async updateScheduleEnd(id, endAt) {
      const path = `/v2/schedules/${validId(id, 'schedule')}.json`;
      const r = await client.sendOk('PUT', path, { body: { end_at: skytapTime(endAt), delete_at_end: true }, what: `schedule ${id}` });
      return client.parse(r.body, scheduleSchema, `PUT ${path}`);
    },
  };
}
