import { randomBytes } from 'node:crypto';
import type { EmuEnv, EmulatorState } from './state';

/**
 * Sharing portals ("publish sets") and schedules, as documented (research/skytap-api.md §6–7,
 * second pass): a portal's password is write-only (asterisks on every read), its link is
 * `desktops_url`, `view_only` access answers 409, an administrator can disable portals for the
 * account (403 with a message saying so); a schedule with `delete_at_end` deletes its environment
 * when it ends and then deletes itself. Time is the state's clock (`state.now`), so a test that
 * advances it sees schedules end.
 */

export interface EmuPortal {
  id: string;
  envId: string;
  name: string;
  hash: string;
  password: string | null;
  expirationDate: string | null;
  expirationTz: string | null;
  runtimeLimit: number | null;
  vms: { vm_ref: string; access: string }[];
}

export interface EmuSchedule {
  id: string;
  title: string;
  envId: string;
  startAt: number;
  endAt: number;
  deleteAtEnd: boolean;
  timeZone: string;
}

export type SharingReply = { status: number; body: unknown } | { page: unknown[] };

export const PORTALS_DISABLED_MESSAGE = 'Sharing portals have been disabled for this account by an administrator.';

export class SharingState {
  readonly portals = new Map<string, EmuPortal>();
  readonly schedules = new Map<string, EmuSchedule>();
  /** suspend_on_idle (seconds) per environment id, as an environment body reports it. */
  readonly suspendOnIdle = new Map<string, number>();
  /** An administrator disabled sharing portals for the account. */
  portalsDisabled = false;
  /** Every password ever accepted, in the order received (tests check what was sent). */
  readonly passwordsReceived: string[] = [];
  private nextPortal = 300;
  private nextSchedule = 7000;

  constructor(private readonly state: EmulatorState) {}

  clear(): void {
    this.portals.clear();
    this.schedules.clear();
    this.suspendOnIdle.clear();
    this.portalsDisabled = false;
    this.passwordsReceived.length = 0;
  }

  /** Ends every schedule whose end has passed: delete_at_end begins deleting its environment. */
  tick(): void {
    const now = this.state.now();
    for (const s of [...this.schedules.values()]) {
      if (now < s.endAt) continue;
      this.schedules.delete(s.id);
      if (!s.deleteAtEnd) continue;
      const env = this.state.environments.get(s.envId);
      if (env && env.deletingAt === null) this.state.beginDelete(env);
    }
    for (const p of [...this.portals.values()]) {
      if (!this.state.environments.has(p.envId)) this.portals.delete(p.id);
    }
  }

  portalJson(p: EmuPortal, baseUrl: string): Record<string, unknown> {
    return {
      id: p.id,
      url: `${baseUrl}/v2/configurations/${p.envId}/publish_sets/${p.id}`,
      desktops_url: `${baseUrl}/vms/${p.hash}/desktops`,
      name: p.name,
      publish_set_type: 'single_url',
      password: p.password ? '*'.repeat(8) : null,
      expiration_date: p.expirationDate,
      expiration_date_tz: p.expirationTz,
      runtime_limit: p.runtimeLimit,
      runtime_left_in_seconds: p.runtimeLimit === null ? null : p.runtimeLimit * 60,
      vms: p.vms.map((v) => ({ ...v, id: v.vm_ref.split('/').pop(), run_and_use: v.access === 'run_and_use' })),
    };
  }

  scheduleJson(s: EmuSchedule): Record<string, unknown> {
    return {
      id: s.id,
      title: s.title,
      configuration_id: s.envId,
      start_at: skytapDate(s.startAt),
      end_at: skytapDate(s.endAt),
      time_zone: s.timeZone,
      delete_at_end: s.deleteAtEnd,
    };
  }

  /** The publish_sets an environment body carries. */
  envPortals(env: EmuEnv, baseUrl: string): Record<string, unknown>[] {
    return [...this.portals.values()].filter((p) => p.envId === env.id).map((p) => this.portalJson(p, baseUrl));
  }

  /** Handles a sharing-portal or schedule request; null when the path is not one. */
  route(method: string, s: string[], body: unknown, baseUrl: string): SharingReply | null {
    this.tick();
    if (s[0] === 'schedules') return this.scheduleRoute(method, s, body);
    if (s[0] !== 'configurations' || s[2] !== 'publish_sets') return null;
    const env = this.state.settle(s[1]!);
    if (!env) return err(404, `Environment ${s[1]} not found`);
    if (this.portalsDisabled) return { status: 403, body: { error: PORTALS_DISABLED_MESSAGE } };
    if (s.length === 3 && method === 'GET') return { page: this.envPortals(env, baseUrl) };
    if (s.length === 3 && method === 'POST') {
      const b = asObject(body);
      if (!b) return err(422, 'Expected a JSON object');
      const vms = this.checkVms(env, b.vms);
      if (typeof vms === 'object' && 'status' in vms) return vms;
      const bad = this.checkFields(b);
      if (bad) return bad;
      const p: EmuPortal = {
        id: String(this.nextPortal++),
        envId: env.id,
        name: typeof b.name === 'string' ? b.name : `Sharing portal ${this.nextPortal}`,
        hash: randomBytes(12).toString('hex'),
        password: null,
        expirationDate: null,
        expirationTz: null,
        runtimeLimit: null,
        vms,
      };
      this.apply(p, b);
      this.portals.set(p.id, p);
      return { status: 200, body: this.portalJson(p, baseUrl) };
    }
    const p = this.portals.get(s[3] ?? '');
    if (!p || p.envId !== env.id || s.length !== 4) return err(404, `Sharing portal ${s[3] ?? ''} not found`);
    if (method === 'GET') return { status: 200, body: this.portalJson(p, baseUrl) };
    if (method === 'DELETE') {
      this.portals.delete(p.id);
      return { status: 200, body: undefined };
    }
    if (method === 'PUT') {
      const b = asObject(body);
      if (!b) return err(422, 'Expected a JSON object');
      if (b.vms !== undefined) {
        const vms = this.checkVms(env, b.vms);
        if (typeof vms === 'object' && 'status' in vms) return vms;
        p.vms = vms;
      }
      const bad = this.checkFields(b);
      if (bad) return bad;
      this.apply(p, b);
      return { status: 200, body: this.portalJson(p, baseUrl) };
    }
    return null;
  }

  private checkVms(env: EmuEnv, raw: unknown): { vm_ref: string; access: string }[] | { status: number; body: unknown } {
    if (!Array.isArray(raw) || raw.length === 0) return err(422, 'A sharing portal needs at least one VM');
    const out: { vm_ref: string; access: string }[] = [];
    for (const v of raw) {
      const o = asObject(v);
      const ref = typeof o?.vm_ref === 'string' ? o.vm_ref : '';
      const vmId = /\/vms\/([^/]+)$/.exec(ref)?.[1];
      if (!vmId || !env.vms.some((x) => x.id === vmId)) return err(422, `VM ${ref || '(none)'} is not in environment ${env.id}`);
      const access = o?.access ?? 'use';
      if (access === 'view_only') return err(409, 'view_only access is not supported for this VM');
      if (access !== 'use' && access !== 'run_and_use') return err(422, `Access ${String(access)} is not valid`);
      out.push({ vm_ref: ref, access });
    }
    return out;
  }

  private checkFields(b: Record<string, unknown>): { status: number; body: unknown } | null {
    if (b.password !== undefined && b.password !== null && typeof b.password !== 'string') return err(422, 'Password must be a string');
    if (
      b.runtime_limit !== undefined &&
      b.runtime_limit !== null &&
      (!Number.isInteger(b.runtime_limit) || (b.runtime_limit as number) < 1)
    ) {
      return err(422, 'Runtime limit must be a positive number of minutes');
    }
    if (
      b.expiration_date !== undefined &&
      b.expiration_date !== null &&
      (typeof b.expiration_date !== 'string' || !SKYTAP_DATE.test(b.expiration_date))
    ) {
      return err(422, 'Expiration date is not a valid date');
    }
    return null;
  }

  private apply(p: EmuPortal, b: Record<string, unknown>): void {
    if (typeof b.name === 'string') p.name = b.name;
    if (b.password !== undefined) {
      p.password = typeof b.password === 'string' && b.password !== '' ? b.password : null;
      if (p.password) this.passwordsReceived.push(p.password);
    }
    if (b.expiration_date !== undefined) p.expirationDate = (b.expiration_date as string | null) ?? null;
    if (typeof b.expiration_date_tz === 'string') p.expirationTz = b.expiration_date_tz;
    if (b.runtime_limit !== undefined) p.runtimeLimit = (b.runtime_limit as number | null) ?? null;
  }

  private scheduleRoute(method: string, s: string[], body: unknown): SharingReply | null {
    if (s.length === 1 && method === 'GET') return { page: [...this.schedules.values()].map((x) => this.scheduleJson(x)) };
    if (s.length === 1 && method === 'POST') {
      const b = asObject(body);
      if (!b) return err(422, 'Expected a JSON object');
      const envId = b.configuration_id === undefined ? '' : String(b.configuration_id);
      if (!this.state.settle(envId)) return err(422, `Environment ${envId || '(none)'} does not exist`);
      const start = parseDate(b.start_at);
      const end = parseDate(b.end_at);
      if (start === null || end === null) return err(422, 'start_at and end_at must be dates');
      if (end <= start) return err(422, 'end_at must be after start_at');
      const sch: EmuSchedule = {
        id: String(this.nextSchedule++),
        title: typeof b.title === 'string' ? b.title : 'Schedule',
        envId,
        startAt: start,
        endAt: end,
        deleteAtEnd: b.delete_at_end === true,
        timeZone: typeof b.time_zone === 'string' ? b.time_zone : 'UTC',
      };
      this.schedules.set(sch.id, sch);
      return { status: 200, body: this.scheduleJson(sch) };
    }
    const sch = this.schedules.get(s[1] ?? '');
    if (!sch || s.length !== 2) return err(404, `Schedule ${s[1] ?? ''} not found`);
    if (method === 'GET') return { status: 200, body: this.scheduleJson(sch) };
    if (method === 'DELETE') {
      this.schedules.delete(sch.id);
      return { status: 200, body: undefined };
    }
    if (method === 'PUT') {
      const b = asObject(body);
      if (!b) return err(422, 'Expected a JSON object');
      if (b.end_at !== undefined) {
        const end = parseDate(b.end_at);
        if (end === null || end <= sch.startAt) return err(422, 'end_at must be a date after start_at');
        sch.endAt = end;
      }
      if (typeof b.delete_at_end === 'boolean') sch.deleteAtEnd = b.delete_at_end;
      return { status: 200, body: this.scheduleJson(sch) };
    }
    return null;
  }
}

const SKYTAP_DATE = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})(?: ([+-])(\d{2}):?(\d{2}))?$/;

function parseDate(v: unknown): number | null {
  if (typeof v !== 'string') return null;
  const m = SKYTAP_DATE.exec(v);
  if (!m) {
    const t = Date.parse(v);
    return /^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(t) ? t : null;
  }
  let t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  if (m[7]) t -= (m[7] === '+' ? 1 : -1) * (+m[8]! * 60 + +m[9]!) * 60_000;
  return t;
}

function skytapDate(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  );
}

function err(status: number, message: string): { status: number; body: unknown } {
  return { status, body: status === 404 ? { error: message } : { errors: [message] } };
}

function asObject(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}
