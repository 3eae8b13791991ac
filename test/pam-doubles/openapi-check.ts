/**
 * Just enough OpenAPI 3.0 to check a request (and a double's answer) against an official spec:
 * path templates, declared query parameters, and JSON Schema for bodies — type, nullable, enum,
 * required, properties, additionalProperties, readOnly, lengths, ranges, pattern, allOf / oneOf /
 * anyOf, items. `strict` refuses properties a schema does not declare (PRA answers 401 to them).
 */
export type Schema = Record<string, unknown>;
type Spec = { paths: Record<string, Record<string, unknown>>; components?: Record<string, Record<string, unknown>> };

export function resolve(spec: Spec, s: unknown): Schema {
  let cur = s as Schema;
  for (let i = 0; cur && typeof cur.$ref === 'string' && i < 20; i++) {
    const parts = (cur.$ref as string).replace(/^#\//, '').split('/');
    cur = parts.reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], spec) as Schema;
  }
  return cur;
}

/** Property names a schema declares, through allOf. */
function declared(spec: Spec, s: Schema): Set<string> | null {
  const names = new Set<string>(Object.keys((s.properties as object) ?? {}));
  let open = s.additionalProperties !== undefined && s.additionalProperties !== false;
  for (const sub of (s.allOf as unknown[]) ?? []) {
    const d = declared(spec, resolve(spec, sub));
    if (d === null) open = true;
    else d.forEach((n) => names.add(n));
  }
  return open ? null : names;
}

export function validate(spec: Spec, schema: unknown, v: unknown, path: string, opts: { request: boolean; strict: boolean }): string[] {
  const s = resolve(spec, schema);
  if (!s || typeof s !== 'object') return [];
  const errs: string[] = [];
  if (v === null) return s.nullable === true || s.type === undefined ? [] : [`${path}: null is not allowed`];
  if (s.allOf) for (const sub of s.allOf as unknown[]) errs.push(...validate(spec, sub, v, path, { ...opts, strict: false }));
  if (s.oneOf || s.anyOf) {
    const alts = (s.oneOf ?? s.anyOf) as unknown[];
    if (!alts.some((a) => validate(spec, a, v, path, opts).length === 0)) errs.push(`${path}: matches none of ${alts.length} alternatives`);
  }
  const t = s.type as string | undefined;
  if (t === 'object' || (t === undefined && (s.properties || s.allOf) && typeof v === 'object')) {
    if (typeof v !== 'object' || Array.isArray(v)) return [...errs, `${path}: expected an object`];
    const o = v as Record<string, unknown>;
    for (const r of (s.required as string[]) ?? []) if (o[r] === undefined) errs.push(`${path}.${r}: required`);
    const props = (s.properties ?? {}) as Record<string, unknown>;
    for (const [k, val] of Object.entries(o)) {
      if (props[k] !== undefined) {
        const ps = resolve(spec, props[k]);
        if (opts.request && ps.readOnly === true) errs.push(`${path}.${k}: read-only, must not be sent`);
        errs.push(...validate(spec, ps, val, `${path}.${k}`, opts));
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        errs.push(...validate(spec, s.additionalProperties, val, `${path}.${k}`, opts));
      }
    }
    if (opts.strict) {
      const names = declared(spec, s);
      if (names) for (const k of Object.keys(o)) if (!names.has(k)) errs.push(`${path}.${k}: not in the schema`);
    }
    return errs;
  }
  if (t === 'array') {
    if (!Array.isArray(v)) return [...errs, `${path}: expected an array`];
    v.forEach((x, i) => errs.push(...validate(spec, s.items, x, `${path}[${i}]`, opts)));
    return errs;
  }
  if (t === 'integer' && !(typeof v === 'number' && Number.isInteger(v)))
    return [...errs, `${path}: expected an integer (a JSON number), got ${JSON.stringify(v)}`];
  if (t === 'number' && typeof v !== 'number') return [...errs, `${path}: expected a number`];
  if (t === 'boolean' && typeof v !== 'boolean') return [...errs, `${path}: expected a boolean`];
  if (t === 'string' && typeof v !== 'string') return [...errs, `${path}: expected a string`];
  if (s.enum && !(s.enum as unknown[]).includes(v)) errs.push(`${path}: ${JSON.stringify(v)} not in ${JSON.stringify(s.enum)}`);
  if (typeof v === 'string') {
    if (typeof s.minLength === 'number' && v.length < s.minLength) errs.push(`${path}: shorter than ${s.minLength}`);
    if (typeof s.maxLength === 'number' && v.length > s.maxLength) errs.push(`${path}: longer than ${s.maxLength}`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(v)) errs.push(`${path}: does not match ${s.pattern}`);
  }
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) errs.push(`${path}: below ${s.minimum}`);
    if (typeof s.maximum === 'number' && v > s.maximum) errs.push(`${path}: above ${s.maximum}`);
  }
  return errs;
}

export interface Operation {
  template: string;
  op: Record<string, unknown>;
  params: Schema[];
}

/** The operation a request is for, matching path templates ({id} is one segment). */
export function findOperation(spec: Spec, method: string, path: string): Operation | null {
  for (const [template, item] of Object.entries(spec.paths)) {
    const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (!re.test(path)) continue;
    const op = (item as Record<string, unknown>)[method.toLowerCase()] as Record<string, unknown> | undefined;
    if (!op) continue;
    const shared = ((item as Record<string, unknown>).parameters as unknown[]) ?? [];
    const params = [...shared, ...((op.parameters as unknown[]) ?? [])].map((p) => resolve(spec, p));
    return { template, op, params };
  }
  return null;
}

/** Checks one recorded request: its operation, query parameters and JSON body. */
export function checkRequest(
  spec: Spec,
  req: { method: string; path: string; query: Record<string, string>; body: unknown },
  opts: { strict: boolean },
): string[] {
  const where = `${req.method} ${req.path}`;
  const found = findOperation(spec, req.method, req.path);
  if (!found) return [`${where}: no such operation in the spec`];
  const errs: string[] = [];
  for (const [k, raw] of Object.entries(req.query)) {
    const p = found.params.find((x) => x.in === 'query' && x.name === k);
    if (!p) {
      errs.push(`${where}: query parameter ${k} is not declared`);
      continue;
    }
    const ps = resolve(spec, p.schema);
    const value = ps.type === 'integer' || ps.type === 'number' ? Number(raw) : raw;
    errs.push(...validate(spec, ps, value, `${where}?${k}`, { request: true, strict: false }));
  }
  for (const p of found.params.filter((x) => x.in === 'query' && x.required === true))
    if (req.query[p.name as string] === undefined) errs.push(`${where}: required query parameter ${p.name as string} missing`);
  const body = (found.op.requestBody as Schema | undefined) && resolve(spec, found.op.requestBody);
  const schema = body ? (body.content as Record<string, { schema: unknown }> | undefined)?.['application/json']?.schema : undefined;
  if (req.body !== undefined && req.body !== '' && schema)
    errs.push(...validate(spec, schema, req.body, `${where} body`, { request: true, ...opts }));
  else if (req.body !== undefined && req.body !== '' && !schema && req.method !== 'DELETE')
    errs.push(`${where}: sends a body the operation does not take`);
  return errs;
}

/** Checks a double's answer against the operation's declared response (status and JSON schema). */
export function checkResponse(spec: Spec, req: { method: string; path: string; status: number; response: unknown }): string[] {
  const found = findOperation(spec, req.method, req.path);
  if (!found) return [];
  const responses = (found.op.responses ?? {}) as Record<string, unknown>;
  const r = responses[String(req.status)];
  const where = `${req.method} ${req.path} → ${req.status}`;
  if (!r) return [`${where}: status not declared`];
  const schema = (resolve(spec, r).content as Record<string, { schema: unknown }> | undefined)?.['application/json']?.schema;
  return schema && req.response !== undefined ? validate(spec, schema, req.response, where, { request: false, strict: false }) : [];
}
