/**
 * The emulator's REST routes: templates, projects, environments (configurations), their VMs, user
 * data and published services, with Skytap's count/offset paging and its busy and validation
 * replies; sharing portals and schedules are ./sharing's. Faults that change an answer's content
 * (shortPage, stayBusy, rateLimited, hideMs) are applied here; the rest in ./emulator.
 */
import { BUSY_MESSAGE, type Fault } from './faults';
import { asObject, error, HttpReply, sleep } from './http';
import type { SharingState } from './sharing';
import type { EmuEnv, EmulatorState } from './state';

export const USER_DATA_MAX = 16384;

/**
 * Switches that break one documented assumption each, for `povdesk doctor`'s tests (docs/skytap.md,
 * docs/share.md): a catalogue that ignores count/offset and sends no Content-Range; schedules whose
 * environment field has another name.
 */
export interface Breaks {
  paging: boolean;
  scheduleShape: boolean;
}

export class SkytapRoutes {
  /** Environments left out of listings until a time (fault hideMs). */
  private readonly hiddenUntil = new Map<string, number>();

  constructor(
    private readonly state: EmulatorState,
    private readonly sharing: SharingState,
    private readonly breaks: Breaks,
    /** The emulator's own URL (links in replies), known once it listens. */
    private readonly url: () => string,
  ) {}

  async route(method: string, path: string, query: Record<string, string>, body: unknown, fault: Fault | null): Promise<HttpReply> {
    const baseUrl = this.url();
    const p = path
      .replace(/\.json$/, '')
      .replace(/^\/v1\//, '/')
      .replace(/\/+$/, '');
    const seg = p.split('/').slice(1);
    const v2 = seg[0] === 'v2';
    const s = v2 ? seg.slice(1) : seg;

    const shared = this.sharing.route(method, s, body, baseUrl);
    const renamed = (x: unknown) => {
      if (!this.breaks.scheduleShape || s[0] !== 'schedules') return x;
      const { configuration_id: env, ...rest } = x as Record<string, unknown>;
      return { ...rest, environment_id: env };
    };
    if (shared) return 'page' in shared ? this.page(shared.page, renamed, query, fault) : new HttpReply(shared.status, shared.body);

    if (method === 'GET') {
      // /v2/templates[/{id}]
      if (s[0] === 'templates' && s.length === 1) {
        return this.page([...this.state.templates.values()], (t) => this.state.templateJson(t, baseUrl), query, fault);
      }
      if (s[0] === 'templates' && s.length === 2) {
        const t = this.state.templates.get(s[1]!);
        return t ? new HttpReply(200, this.state.templateJson(t, baseUrl)) : error(404, `Template ${s[1]} not found`);
      }
      // /v2/projects/{id}/templates|configurations
      if (s[0] === 'projects' && s.length === 3 && (s[2] === 'templates' || s[2] === 'configurations')) {
        const pid = s[1]!;
        if (!this.state.projects.has(pid)) return error(404, `Project ${pid} not found`);
        if (s[2] === 'templates') {
          const items = [...this.state.templates.values()].filter((t) => t.projects.has(pid));
          return this.page(items, (t) => this.state.templateJson(t, baseUrl), query, fault);
        }
        const envs = this.liveEnvs().filter((e) => e.projects.has(pid));
        return this.page(envs, (e) => this.state.envJson(e, baseUrl), query, fault);
      }
      if (s[0] === 'configurations' && s.length === 1) {
        return this.page(this.liveEnvs(), (e) => this.state.envJson(e, baseUrl), query, fault);
      }
      if (s[0] === 'configurations' && s.length >= 2) {
        const env = this.state.settle(s[1]!);
        if (!env) return error(404, `Environment ${s[1]} not found`);
        if (s.length === 2) return new HttpReply(200, this.state.envJson(env, baseUrl));
        if (s[2] === 'vms' && s.length === 3) return this.page(env.vms, (vm) => this.state.vmJson(env, vm, baseUrl), query, fault);
        const vm = s[2] === 'vms' ? env.vms.find((v) => v.id === s[3]) : undefined;
        if (!vm) return error(404, `VM ${s[3] ?? ''} not found`);
        if (s.length === 4) return new HttpReply(200, this.state.vmJson(env, vm, baseUrl));
        if (s.length === 5 && s[4] === 'user_data') return new HttpReply(200, { contents: vm.userData });
        if (s.length === 7 && s[4] === 'interfaces' && s[6] === 'services') {
          if (s[5] !== this.state.nicId(env, vm)) return error(404, `Interface ${s[5]} not found`);
          return new HttpReply(
            200,
            vm.services.map((x) => this.state.serviceJson(x)),
          );
        }
      }
      return error(404, `No route GET ${path}`);
    }

    if (method === 'POST' && s[0] === 'configurations' && s.length === 1) {
      const b = asObject(body);
      const templateId = b?.template_id;
      if (typeof templateId !== 'string' || templateId === '') return error(422, 'Template id is required');
      const tpl = this.state.templates.get(templateId);
      if (!tpl) return error(404, `Template ${templateId} not found`);
      if (tpl.busy) return error(423, 'The template is busy. Try again later.', { 'retry-after': String(this.state.busyRetryAfterSec) });
      const name = b?.name === undefined ? tpl.name : b.name;
      if (typeof name !== 'string') return error(422, 'Name must be a string');
      if (name.length > 255) return error(422, 'Name is too long (maximum is 255 characters)');
      let projectId: string | null = null;
      if (b?.project_id !== undefined && b.project_id !== null) {
        projectId = String(b.project_id);
        if (!this.state.projects.has(projectId)) return error(422, `Project ${projectId} does not exist`);
      }
      const env = this.state.createFromTemplate(tpl, name, projectId);
      if (fault?.kind === 'stayBusy') env.stuckBusy = true;
      if (fault?.hideMs) this.hiddenUntil.set(env.id, Date.now() + fault.hideMs);
      return new HttpReply(200, this.state.envJson(env, baseUrl));
    }

    // Published services: POST …/vms/{vid}/interfaces/{nic}/services {internal_port}, DELETE …/services/{id}
    if (
      (method === 'POST' || method === 'DELETE') &&
      s[0] === 'configurations' &&
      s[2] === 'vms' &&
      s[4] === 'interfaces' &&
      s[6] === 'services'
    ) {
      const env = this.state.settle(s[1]!);
      if (!env) return error(404, `Environment ${s[1]} not found`);
      const vm = env.vms.find((v) => v.id === s[3]);
      if (!vm) return error(404, `VM ${s[3]} not found`);
      if (s[5] !== this.state.nicId(env, vm)) return error(404, `Interface ${s[5]} not found`);
      if (this.state.isBusy(env))
        return error(423, 'The environment is busy. Try again later.', { 'retry-after': String(this.state.busyRetryAfterSec) });
      if (method === 'POST' && s.length === 7) {
        const port = asObject(body)?.internal_port;
        if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
          return error(422, 'Internal port must be an integer from 1 to 65535');
        if (vm.services.some((x) => x.internalPort === port)) return error(422, `Port ${port} is already published`);
        const svc = this.state.newService(port, env.region);
        vm.services.push(svc);
        return new HttpReply(200, this.state.serviceJson(svc));
      }
      if (method === 'DELETE' && s.length === 8) {
        const i = vm.services.findIndex((x) => x.id === s[7]);
        if (i < 0) return error(404, `Service ${s[7]} not found`);
        vm.services.splice(i, 1);
        return new HttpReply(200, undefined);
      }
    }

    if ((method === 'PUT' || method === 'DELETE') && s[0] === 'configurations' && s.length >= 2) {
      const env = this.state.settle(s[1]!);
      if (!env) return error(404, `Environment ${s[1]} not found`);

      if (method === 'DELETE' && s.length === 2) {
        if (this.state.isBusy(env)) {
          return error(423, 'The environment is busy. Try again later.', { 'retry-after': String(this.state.busyRetryAfterSec) });
        }
        this.state.beginDelete(env);
        if (fault?.kind === 'stayBusy') env.stuckBusy = true;
        return new HttpReply(200, undefined);
      }
      if (method === 'PUT' && s.length === 2) {
        const b = asObject(body);
        if (!b) return error(422, 'Expected a JSON object');
        if (b.name !== undefined) {
          if (typeof b.name !== 'string' || b.name.length > 255) return error(422, 'Name is invalid');
        }
        if (b.runstate !== undefined) {
          if (!['running', 'suspended', 'stopped', 'halted'].includes(String(b.runstate))) {
            return error(422, `Runstate ${JSON.stringify(b.runstate)} is not one of running, suspended, stopped, halted`);
          }
          if (this.state.isBusy(env) || env.queued) return error(422, BUSY_MESSAGE);
          this.state.beginRunstate(env, b.runstate as 'running', { rateLimited: fault?.kind === 'rateLimited' });
          if (fault?.kind === 'stayBusy') env.stuckBusy = true;
        }
        if (typeof b.name === 'string') env.name = b.name;
        return new HttpReply(200, this.state.envJson(env, baseUrl));
      }
      if (method === 'PUT' && s.length === 5 && s[2] === 'vms' && s[4] === 'user_data') {
        const vm = env.vms.find((v) => v.id === s[3]);
        if (!vm) return error(404, `VM ${s[3]} not found`);
        const b = asObject(body);
        if (!b || typeof b.contents !== 'string') return error(422, 'Contents must be a string');
        if (b.contents.length > USER_DATA_MAX) return error(422, 'Contents is too long (maximum is 16384 characters)');
        if (this.state.isBusy(env)) return error(422, BUSY_MESSAGE);
        vm.userData = b.contents;
        return new HttpReply(200, { contents: vm.userData });
      }
    }
    return error(404, `No route ${method} ${path}`);
  }

  /** Environments listed now: those hidden until a time (fault hideMs) are left out, a listing lagging behind a create. */
  liveEnvs(): EmuEnv[] {
    const now = Date.now();
    return this.state
      .environmentIds()
      .filter((id) => (this.hiddenUntil.get(id) ?? 0) <= now)
      .map((id) => this.state.environments.get(id)!);
  }

  private async page<T>(all: T[], view: (item: T) => unknown, query: Record<string, string>, fault: Fault | null): Promise<HttpReply> {
    const count = query.count === undefined ? 100 : Number(query.count);
    const offset = query.offset === undefined ? 0 : Number(query.offset);
    if (!Number.isInteger(count) || count < 1 || !Number.isInteger(offset) || offset < 0) {
      return error(422, 'count and offset must be non-negative integers');
    }
    if (this.state.pageLatencyMs > 0) await sleep(this.state.pageLatencyMs);
    if (this.breaks.paging) return new HttpReply(200, all.map(view));
    const size = Math.min(count, 100);
    let items = all.slice(offset, offset + size).map(view);
    const range = items.length ? `items ${offset}-${offset + items.length - 1}/${all.length}` : `items */${all.length}`;
    if (fault?.kind === 'shortPage' && items.length) items = items.slice(0, -1);
    return new HttpReply(200, items, { 'content-range': range });
  }
}
