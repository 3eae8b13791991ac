/**
 * A small client for the vm-manager REST API: this local daemon (http://127.0.0.1:port or
 * unix:/path) or a remote cluster vm-manager (https + bearer token). Errors come back as
 * VmmError with the server's code and message.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { VmmError, type VmmCode } from './errors';
import type { CreateVmBody } from './api';
import type { HostReport } from './host';
import type { VmRecord } from './vms';

export class VmManagerClient {
  constructor(private readonly baseUrl: string, private readonly token: string, private readonly timeoutMs = 600_000) {}

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    if (payload) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    let opts: RequestOptions;
    let requester = httpRequest;
    if (this.baseUrl.startsWith('unix:')) {
      opts = { socketPath: this.baseUrl.slice(5), path: `/api/v1${path}`, method, headers };
    } else {
      const u = new URL(`/api/v1${path}`, this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
      if (u.protocol === 'https:') requester = httpsRequest;
      else if (u.protocol !== 'http:') throw new VmmError('invalid_request', `vm-manager URL must be http(s):// or unix:, got ${this.baseUrl}`);
      opts = { hostname: u.hostname, port: u.port, path: u.pathname + u.search, method, headers };
    }
    return new Promise<T>((resolve, reject) => {
      const req = requester(opts, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status === 204) return resolve(undefined as T);
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            return reject(new VmmError('internal', `vm-manager answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`));
          }
          if (status >= 200 && status < 300) return resolve(json as T);
          const err = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
          reject(new VmmError((err?.code as VmmCode) ?? 'internal', err?.message ?? `vm-manager answered ${status}`));
        });
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer from vm-manager within ${this.timeoutMs} ms`)));
      req.on('error', (e) => reject(new VmmError('unavailable', `cannot reach vm-manager at ${this.baseUrl}: ${e.message}`)));
      req.end(payload);
    });
  }

  host() {
    return this.call<HostReport>('GET', '/host');
  }
  images() {
    return this.call<unknown[]>('GET', '/images');
  }
  /** Imports a qcow2/raw/vmdk that lies under the manager's state dir (the API imports only from there). */
  importImage(path: string, name?: string) {
    return this.call<{ name: string; disk?: string; sha256: string; virtualSizeBytes?: number }>('POST', '/images', name ? { path, name } : { path });
  }
  /** Removes an image no VM uses. */
  deleteImage(name: string) {
    return this.call<void>('DELETE', `/images/${encodeURIComponent(name)}`);
  }
  list() {
    return this.call<VmRecord[]>('GET', '/vms');
  }
  get(id: string) {
    return this.call<VmRecord>('GET', `/vms/${encodeURIComponent(id)}`);
  }
  create(body: CreateVmBody) {
    return this.call<VmRecord>('POST', '/vms', body);
  }
  start(id: string) {
    return this.call<VmRecord>('POST', `/vms/${encodeURIComponent(id)}/start`);
  }
  stop(id: string) {
    return this.call<VmRecord>('POST', `/vms/${encodeURIComponent(id)}/stop`);
  }
  reboot(id: string) {
    return this.call<VmRecord>('POST', `/vms/${encodeURIComponent(id)}/reboot`);
  }
  delete(id: string) {
    return this.call<void>('DELETE', `/vms/${encodeURIComponent(id)}`);
  }
  console(id: string, lines = 100) {
    return this.call<{ id: string; lines: number; console: string }>('GET', `/vms/${encodeURIComponent(id)}/console?lines=${lines}`);
  }
  /** One learn boot of the image (minutes under TCG): the proposed golden values, not yet saved. */
  learnGolden(image: string) {
    return this.call<import('./golden').LearnedGolden>('POST', `/images/${encodeURIComponent(image)}/learn-golden`);
  }
  saveGolden(image: string, golden: Record<string, string>, firmware: { path: string; sha256: string } | null) {
    return this.call<unknown>('PUT', `/images/${encodeURIComponent(image)}/golden`, { golden, firmware });
  }
  attestation(id: string) {
    return this.call<ReturnType<typeof import('./api').attestationView>>('GET', `/vms/${encodeURIComponent(id)}/attestation`);
  }
}
