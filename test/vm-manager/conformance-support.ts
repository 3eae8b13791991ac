/** Shared by the conformance suites: calling the API and checking answers against the document's schemas. */
import { expect } from 'vitest';
import type { z } from 'zod';
import { ERROR_STATUS, errorSchema } from '../../main/vm-api/schemas';

export interface Answer {
  status: number;
  type: string;
  text: string;
  body: unknown;
}

export function caller(base: string, token: string) {
  return async (method: string, path: string, body?: unknown, opts: { raw?: string; auth?: boolean } = {}): Promise<Answer> => {
    const headers: Record<string, string> = {};
    if (opts.auth !== false) headers.Authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (opts.raw !== undefined) payload = opts.raw;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${base}/api/v1${path}`, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, type: res.headers.get('content-type') ?? '', text, body: parsed };
  };
}

/** Drops the daemon's own `povdesk` objects (at any depth of arrays/objects' top level). */
function withoutExtension(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutExtension);
  if (v && typeof v === 'object') {
    const { povdesk: _ignored, ...rest } = v as Record<string, unknown>;
    return rest;
  }
  return v;
}

/**
 * The answer has the status and validates against the document's schema; apart from `povdesk`, it
 * carries only fields the document names (parsing strips unknown keys, so a difference shows them).
 */
export function expectDoc<S extends z.ZodType>(a: Answer, status: number, schema: S): z.output<S> {
  expect(a.status, a.text).toBe(status);
  expect(a.type).toMatch(/^application\/json/);
  const r = schema.safeParse(a.body);
  if (!r.success) throw new Error(`answer does not validate: ${JSON.stringify(r.error.issues)}\n${a.text.slice(0, 2000)}`);
  expect(r.data).toEqual(withoutExtension(a.body));
  return r.data;
}

/** The document's error shape with this code, and the status the code travels with. */
export function expectError(a: Answer, code: keyof typeof ERROR_STATUS, message?: RegExp) {
  expect(a.status, a.text).toBe(ERROR_STATUS[code]);
  const e = expectDoc(a, ERROR_STATUS[code], errorSchema);
  expect(e.error.code).toBe(code);
  if (message) expect(e.error.message).toMatch(message);
  return e;
}
