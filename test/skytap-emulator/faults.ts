/**
 * The emulator's fault script: tests push faults; the first pending fault matching a request is
 * consumed (`times`, default 1) and changes how that request is answered.
 *
 *   emu.faults.push({ match: 'POST /configurations', status: 423, retryAfter: 2 });
 *   emu.faults.push({ match: 'GET /v2/configurations', kind: 'shortPage' });
 *   emu.faults.push({ match: 'POST /configurations', status: 500, afterHandling: true }); // created, then 500
 *   emu.faults.push({ match: 'POST /configurations', status: 504, afterHandling: true, hideMs: 5000 }); // and unlisted for 5 s
 *   emu.faults.push({ match: 'POST /configurations', replyDelayMs: 5000 }); // created at once, answered 5 s later
 *
 * `match` is "METHOD /path" (method may be *; a ".json" suffix is ignored on both sides; a path
 * segment "*" matches one segment, a final "**" the rest), a RegExp tested against
 * "METHOD /path", or a function.
 */

export type FaultKind =
  /** 200 with a body that is not JSON. */
  | 'malformed'
  /** Content-Length promises the whole body, half is sent, then the socket is closed. */
  | 'truncated'
  /** A collection page missing its last item while Content-Range still promises it. */
  | 'shortPage'
  /** The environment created or changed by this request never leaves busy. */
  | 'stayBusy'
  /** A runstate change is queued by Skytap under load: rate_limited true for a while. */
  | 'rateLimited'
  /** The connection is closed without a reply. */
  | 'reset'
  /** No reply at all (until the emulator closes): for timeouts. */
  | 'hang';

export interface Fault {
  match: string | RegExp | ((req: { method: string; path: string }) => boolean);
  /** How many matching requests this fault applies to (default 1; Infinity for all). */
  times?: number;
  /** Reply with this status (and a Skytap error body) instead of handling the request. */
  status?: number;
  /** Retry-After header value: seconds, an HTTP date, or garbage. */
  retryAfter?: number | string;
  /** Skytap's error text, sent as {"errors": [message]}. */
  message?: string;
  /** A raw body to send instead (with status). */
  body?: string;
  /** Extra reply headers (with status), e.g. a hand-made content-range. */
  headers?: Record<string, string>;
  /** Wait this long before answering (a slow reply); alone, the request is then handled normally. */
  delayMs?: number;
  /** Wait until this settles before answering (a reply the test releases); alone, the request is then handled normally. */
  holdUntil?: Promise<unknown>;
  kind?: FaultKind;
  /** Perform the real operation first, then answer with the fault (e.g. created, then a 500). */
  afterHandling?: boolean;
  /** With afterHandling on POST /configurations: the new environment is left out of listings for this long (GET by id still finds it). */
  hideMs?: number;
  /** Perform the real operation, then hold the reply this long (a create that is made but not yet answered). */
  replyDelayMs?: number;
}

/** Skytap's message on a runstate change attempted while busy. */
export const BUSY_MESSAGE = 'The environment is busy. Try again later.';

interface Pending {
  fault: Fault;
  left: number;
  used: number;
}

export class FaultScript {
  private pending: Pending[] = [];
  /** Faults applied so far, in order (for assertions). */
  readonly applied: Array<{ method: string; path: string; fault: Fault }> = [];

  push(...faults: Fault[]): this {
    for (const fault of faults) {
      validateFault(fault);
      this.pending.push({ fault, left: fault.times ?? 1, used: 0 });
    }
    return this;
  }

  clear(): void {
    this.pending = [];
  }

  /** Faults not yet used up. */
  remaining(): Fault[] {
    return this.pending.filter((p) => p.left > 0).map((p) => p.fault);
  }

  /** Consumes and returns the first fault matching the request, if any. */
  take(method: string, path: string): Fault | null {
    for (const p of this.pending) {
      if (p.left <= 0) continue;
      if (!matches(p.fault.match, method, path)) continue;
      p.left--;
      p.used++;
      this.applied.push({ method, path, fault: p.fault });
      return p.fault;
    }
    return null;
  }
}

function validateFault(f: Fault): void {
  if (f.status !== undefined && (!Number.isInteger(f.status) || f.status < 100 || f.status > 599)) {
    throw new Error(`fault status ${f.status} is not an HTTP status`);
  }
  if (f.times !== undefined && !(f.times > 0)) throw new Error('fault times must be > 0');
}

function stripJson(p: string): string {
  return p.replace(/\.json$/, '').replace(/\/+$/, '') || '/';
}

export function matches(m: Fault['match'], method: string, path: string): boolean {
  const normal = stripJson(path);
  if (typeof m === 'function') return m({ method, path: normal });
  if (m instanceof RegExp) return m.test(`${method} ${normal}`);
  const sp = m.trim().split(/\s+/);
  const [wantMethod, wantPath] = sp.length === 2 ? [sp[0]!, sp[1]!] : ['*', sp[0]!];
  if (wantMethod !== '*' && wantMethod.toUpperCase() !== method.toUpperCase()) return false;
  const want = stripJson(wantPath).split('/');
  const got = normal.split('/');
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    if (w === '**' && i === want.length - 1) return true;
    if (i >= got.length) return false;
    if (w !== '*' && w !== got[i]) return false;
  }
  return want.length === got.length;
}
