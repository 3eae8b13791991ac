/**
 * GET /api/v1/openapi.yaml: the document this daemon serves, generated from the same zod schemas
 * the routes validate with (main/vm-api/schemas.ts, written from giantswarm/vm-manager's
 * api/openapi.yaml @ dc39fe35), so it cannot drift from what is answered. JSON is YAML 1.2, so it
 * is written as JSON and served as application/yaml.
 */
import { z } from 'zod';
import { API_PREFIX, CONSOLE_LINES, ROUTES, errorSchema } from '../vm-api/schemas';

const PARAM_DOC: Record<string, string> = {
  id: 'VM id as returned by POST /vms or GET /vms.',
  name: 'Network name.',
  ref: '"<id>_<version>" or the bare id for its newest version.',
};

let cached: string | null = null;

export function openApiDocument(): string {
  if (cached) return cached;
  const json = (s: z.ZodType, io: 'input' | 'output') => z.toJSONSchema(s, { io, unrepresentable: 'any' });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, r] of Object.entries(ROUTES)) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      description: PARAM_DOC[m[1] ?? ''],
      schema: { type: 'string' },
    }));
    if (operationId === 'getVMConsole')
      params.push({
        name: 'lines',
        in: 'query',
        required: false,
        description: `Trailing lines to return, default ${CONSOLE_LINES.default}, at most ${CONSOLE_LINES.max}.`,
        schema: { type: 'integer' },
      } as never);
    const ok =
      r.response === null
        ? { description: 'Done.' }
        : operationId === 'getOpenAPI'
          ? { description: 'The OpenAPI document.', content: { 'application/yaml': { schema: { type: 'string' } } } }
          : { description: 'Success.', content: { 'application/json': { schema: json(r.response, 'output') } } };
    const responses: Record<string, unknown> = { [String(r.status)]: ok };
    for (const s of r.errors) responses[String(s)] = { $ref: '#/components/responses/Error' };
    paths[r.path] ??= {};
    (paths[r.path] as Record<string, unknown>)[r.method.toLowerCase()] = {
      operationId,
      ...(params.length ? { parameters: params } : {}),
      ...('request' in r ? { requestBody: { required: true, content: { 'application/json': { schema: json(r.request, 'input') } } } } : {}),
      responses,
    };
  }
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'vm-manager API (POV Desk local daemon)',
      version: 'v1',
      description:
        "giantswarm/vm-manager's /api/v1 (api/openapi.yaml @ dc39fe35c638a4f6ec4b9b8cb9788c1a69ef18e3) as this laptop daemon serves it. " +
        'Request bodies snake_case, records camelCase, errors {"error":{"code","message"}}. ' +
        'Records may carry a `povdesk` object with what only this daemon knows; ' +
        'fields without a meaning here say so in their value (docs/vm-manager-api.md).',
    },
    servers: [{ url: API_PREFIX }],
    paths,
    components: {
      responses: { Error: { description: 'A failed request.', content: { 'application/json': { schema: json(errorSchema, 'output') } } } },
    },
  };
  cached = `${JSON.stringify(doc, null, 2)}\n`;
  return cached;
}
