/**
 * The client of giantswarm/vm-manager's /api/v1 (api/openapi.yaml @ dc39fe35, as ./schemas): the
 * local daemon (http://127.0.0.1:port or unix:/path) or a cluster's vm-manager (https, a custom CA
 * bundle, a bearer from an OIDC login or a static token). Bodies are sent snake_case as the
 * document names them; every answer is validated against the document's schema before use (the
 * value is returned as sent, so a manager's extra fields stay readable, but nothing beyond the
 * document is required). Errors are VmApiError with the server's code and message.
 *
 * A few calls are the local daemon's own (image import/delete, golden values): marked LOCAL below;
 * a cluster's manager answers them 404, which the caller turns into "local manager only".
 */
import type { z } from 'zod';
import { exchange, HttpFailure } from './http';
import {
  API_PREFIX,
  consoleSchema,
  errorSchema,
  execResultSchema,
  forwardSchema,
  hostSchema,
  imageSchema,
  metricsSchema,
  networkSchema,
  vmSchema,
  attestationSchema,
  type CreateNetworkRequest,
} from './schemas';
import { localVmSchema, type LocalCreateVmRequest } from './povdesk';
import { z as zod } from 'zod';

export class VmApiError extends Error {
  /** code: the document's error code, or unauthorized/forbidden (the OAuth guard), unavailable (unreachable) */
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'VmApiError';
  }
}

/** Where the bearer comes from: a static token, or a login that can renew it once after a 401. */
export interface BearerSource {
  bearer(): Promise<string>;
  /** After a 401: a new bearer (refreshed login), or null when only a new login helps. */
  renew?(): Promise<string | null>;
}

export interface ClientOptions {
  timeoutMs?: number;
  /** PEM text of the CA bundle that signs the manager's certificate (a cluster's own CA) */
  ca?: string | undefined;
}

/** The validated answer as sent: the document's fields typed, a manager's extra fields readable (unchecked, any). */
export type Loose<T> = T extends string | number | boolean | null | undefined
  ? T
  : T extends readonly (infer U)[]
    ? Loose<U>[]
    : // eslint-disable-next-line @typescript-eslint/no-explicit-any
      { [K in keyof T]: Loose<T[K]> } & Record<string, any>;
type Answer<S extends z.ZodType> = Loose<z.output<S>>;

const seg = encodeURIComponent;
/** A learn boot is a whole boot under TCG on a busy host: the call waits this long whatever the client's timeout. */
const LEARN_BOOT_MS = 15 * 60_000;

export class VmManagerClient {
  private readonly auth: BearerSource;
  private readonly opts: Required<Pick<ClientOptions, 'timeoutMs'>> & ClientOptions;

  constructor(
    readonly baseUrl: string,
    auth: string | BearerSource,
    opts: number | ClientOptions = {},
  ) {
    this.auth = typeof auth === 'string' ? { bearer: async () => auth } : auth;
    const o = typeof opts === 'number' ? { timeoutMs: opts } : opts;
    this.opts = { ...o, timeoutMs: o.timeoutMs ?? 600_000 };
  }

  /** One request; a 401 asks the bearer source to renew once and tries again. Returns the parsed JSON (undefined for 204). */
  private async send(method: string, path: string, body?: unknown, retried = false, timeoutMs = this.opts.timeoutMs): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const token = await this.auth.bearer();
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
    if (payload) headers['Content-Type'] = 'application/json';
    const base = this.baseUrl.startsWith('unix:') ? this.baseUrl : this.baseUrl.replace(/\/+$/, '');
    let a;
    try {
      a = await exchange(base, `${API_PREFIX}${path}`, { method, headers, body: payload }, { timeoutMs, ca: this.opts.ca });
    } catch (e) {
      if (e instanceof HttpFailure)
        throw new VmApiError(
          e.kind === 'bad_url' ? 'invalid_request' : e.kind === 'timeout' ? 'timeout' : 'unavailable',
          e.kind === 'unreachable' ? e.message.replace(/^cannot reach/, 'cannot reach vm-manager at') : e.message,
        );
      throw e;
    }
    if (a.status === 401 && !retried && this.auth.renew) {
      const fresh = await this.auth.renew();
      if (fresh) return this.send(method, path, body, true, timeoutMs);
    }
    if (a.status === 204) return undefined;
    const type = String(a.headers['content-type'] ?? '');
    // YAML is text to the caller, even when it is written as JSON (JSON is YAML)
    if (a.status >= 200 && a.status < 300 && type.includes('yaml')) return a.text;
    let json: unknown;
    try {
      json = a.text ? JSON.parse(a.text) : undefined;
    } catch {
      throw new VmApiError(
        statusCode(a.status),
        `vm-manager answered ${method} ${path} with ${a.status} and a body that is not JSON (a proxy in front of ` +
          `it?): ${a.text.slice(0, 200)}`,
        a.status,
      );
    }
    if (a.status >= 200 && a.status < 300) return json;
    const err = errorSchema.safeParse(json);
    if (err.success) throw new VmApiError(err.data.error.code, err.data.error.message, a.status);
    // Not the document's error shape: the OAuth guard (401/403) or the daemon's own codes.
    const loose = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    // an OAuth resource server's answer: {"error":"invalid_token","error_description":"..."}
    const oauth = json as { error?: unknown; error_description?: unknown } | undefined;
    const message =
      typeof loose?.message === 'string'
        ? loose.message
        : typeof oauth?.error === 'string'
          ? `vm-manager refused ${method} ${path} ` +
            `(${a.status} ${oauth.error}${typeof oauth.error_description === 'string' ? `: ${oauth.error_description}` : ''})`
          : `vm-manager answered ${method} ${path} with ${a.status}`;
    throw new VmApiError(
      a.status === 401
        ? 'unauthorized'
        : a.status === 403
          ? 'forbidden'
          : typeof loose?.code === 'string'
            ? loose.code
            : statusCode(a.status),
      message,
      a.status,
    );
  }

  /** A call whose answer must match the document's schema. */
  private async call<S extends z.ZodType>(what: string, schema: S, method: string, path: string, body?: unknown): Promise<Answer<S>> {
    const value = await this.send(method, path, body);
    const r = schema.safeParse(value);
    if (!r.success) {
      const where = r.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
        .join('; ');
      throw new VmApiError(
        'internal_error',
        `vm-manager's answer to ${what} is not what giantswarm's vm-manager API document promises (${where})`,
      );
    }
    return value as Answer<S>;
  }

  host() {
    return this.call('GET /host', hostSchema, 'GET', '/host');
  }
  images() {
    return this.call('GET /images', zod.array(imageSchema), 'GET', '/images');
  }
  image(ref: string) {
    return this.call(`GET /images/${ref}`, imageSchema, 'GET', `/images/${seg(ref)}`);
  }
  networks() {
    return this.call('GET /networks', zod.array(networkSchema), 'GET', '/networks');
  }
  network(name: string) {
    return this.call(`GET /networks/${name}`, networkSchema, 'GET', `/networks/${seg(name)}`);
  }
  createNetwork(body: CreateNetworkRequest) {
    return this.call('POST /networks', networkSchema, 'POST', '/networks', body);
  }
  /** POV Desk's own routes (404 elsewhere): save a stopped VM's disk, vTPM and firmware variables, or put them back. */
  saveClean(id: string) {
    return this.call(`POST /vms/${id}/povdesk/save-clean`, vmSchema, 'POST', `/vms/${seg(id)}/povdesk/save-clean`);
  }
  resetClean(id: string) {
    return this.call(`POST /vms/${id}/povdesk/reset-clean`, localVmSchema, 'POST', `/vms/${seg(id)}/povdesk/reset-clean`);
  }
  /** POV Desk's own route (a manager without it answers 404): the network's Internet access. */
  setNetworkInternet(name: string, internet: boolean) {
    return this.call(`PUT /networks/${name}/povdesk/internet`, networkSchema, 'PUT', `/networks/${seg(name)}/povdesk/internet`, {
      internet,
    });
  }
  async deleteNetwork(name: string): Promise<void> {
    await this.send('DELETE', `/networks/${seg(name)}`);
  }
  list() {
    return this.call('GET /vms', zod.array(vmSchema), 'GET', '/vms');
  }
  get(id: string) {
    return this.call(`GET /vms/${id}`, vmSchema, 'GET', `/vms/${seg(id)}`);
  }
  /**
   * POST /vms. Pass wait_for "none" and poll get() for long boots: a proxy's 504 then never loses a VM.
   * A `povdesk` object (host_forwards) is sent as given: LOCAL, giantswarm's manager refuses it (400).
   */
  create(body: LocalCreateVmRequest) {
    return this.call('POST /vms', vmSchema, 'POST', '/vms', body);
  }
  start(id: string) {
    return this.call(`POST /vms/${id}/start`, vmSchema, 'POST', `/vms/${seg(id)}/start`);
  }
  stop(id: string) {
    return this.call(`POST /vms/${id}/stop`, vmSchema, 'POST', `/vms/${seg(id)}/stop`);
  }
  reboot(id: string) {
    return this.call(`POST /vms/${id}/reboot`, vmSchema, 'POST', `/vms/${seg(id)}/reboot`);
  }
  async delete(id: string): Promise<void> {
    await this.send('DELETE', `/vms/${seg(id)}`);
  }
  /** Runs argv as root in the guest; a non-zero exit is a result (exitCode). */
  exec(id: string, command: string[]) {
    return this.call(`POST /vms/${id}/exec`, execResultSchema, 'POST', `/vms/${seg(id)}/exec`, { command });
  }
  /** Exposes guest TCP port on the manager host's loopback (address ip:port); lives until the VM is deleted. */
  forward(id: string, port: number) {
    return this.call(`POST /vms/${id}/forward`, forwardSchema, 'POST', `/vms/${seg(id)}/forward`, { port });
  }
  console(id: string, lines = 100) {
    return this.call(`GET /vms/${id}/console`, consoleSchema, 'GET', `/vms/${seg(id)}/console?lines=${lines}`);
  }
  attestation(id: string) {
    return this.call(`GET /vms/${id}/attestation`, attestationSchema, 'GET', `/vms/${seg(id)}/attestation`);
  }
  metrics(id: string) {
    return this.call(`GET /vms/${id}/metrics`, metricsSchema, 'GET', `/vms/${seg(id)}/metrics`);
  }
  async openapi(): Promise<string> {
    const v = await this.send('GET', '/openapi.yaml');
    if (typeof v !== 'string') throw new VmApiError('internal_error', 'GET /openapi.yaml did not answer YAML text');
    return v;
  }

  // ---- LOCAL: the app's own daemon only (not in the document) -----------------------------------

  /** LOCAL. The daemon's own view of each image (name, path, disk file, sizes: its `povdesk` extras). */
  async localImages(): Promise<{ name: string; path?: string; disk?: string; virtualSizeBytes?: number }[]> {
    return (await this.images()).map((i) => ({ ...(i.povdesk ?? {}), name: typeof i.povdesk?.name === 'string' ? i.povdesk.name : i.id }));
  }
  /** LOCAL. Imports a qcow2/raw/vmdk that lies under the manager's state dir. */
  importImage(path: string, name?: string) {
    return this.send('POST', '/images', name ? { path, name } : { path }) as Promise<{
      name: string;
      disk?: string;
      sha256: string;
      virtualSizeBytes?: number;
    }>;
  }
  /**
   * LOCAL. The user-data the VM's metadata service serves from now on at /skytap/vms/self/user_data
   * (null: none, 204). giantswarm's manager has no such route: 404 `not_found`.
   */
  async setUserData(id: string, userData: string | null): Promise<void> {
    await this.send('PUT', `/vms/${seg(id)}/povdesk/user-data`, { user_data: userData });
  }
  /** LOCAL. Removes an image no VM uses. */
  async deleteImage(name: string): Promise<void> {
    await this.send('DELETE', `/images/${seg(name)}`);
  }
  /** LOCAL. One learn boot of the image at a VM size (minutes under TCG): the proposed golden values, not yet saved. */
  learnGolden(image: string, size: { cpus: number; memoryMib: number }): Promise<unknown> {
    return this.send(
      'POST',
      `/images/${seg(image)}/learn-golden`,
      { cpus: size.cpus, memory_mib: size.memoryMib },
      false,
      Math.max(this.opts.timeoutMs, LEARN_BOOT_MS),
    );
  }
  /** LOCAL. The guest half of attestation (guest-quote.sh) and the PCRs a disk image's quotes cover, for an image builder. */
  attestAgent(): Promise<{ script: string; sha256: string; pcrs: { initrd: number[]; ready: number[] } }> {
    return this.send('GET', '/povdesk/attest-agent') as Promise<{
      script: string;
      sha256: string;
      pcrs: { initrd: number[]; ready: number[] };
    }>;
  }
  /** LOCAL. The image's reference measurements made again from its files (no boot), e.g. after a firmware update. */
  remakeReferences(image: string): Promise<unknown> {
    return this.send('POST', `/images/${seg(image)}/references`, {});
  }
  /** LOCAL. The values hold for VMs of `size`. */
  saveGolden(
    image: string,
    golden: Record<string, string>,
    firmware: { path: string; sha256: string } | null,
    size: { cpus: number; memoryMib: number },
  ): Promise<unknown> {
    return this.send('PUT', `/images/${seg(image)}/golden`, { golden, firmware, cpus: size.cpus, memory_mib: size.memoryMib });
  }
}

function statusCode(status: number): string {
  if (status === 400) return 'invalid_request';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 501) return 'unsupported';
  if (status === 502 || status === 503) return 'unavailable';
  if (status === 504) return 'timeout';
  return 'internal_error';
}
