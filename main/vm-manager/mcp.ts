/**
 * `/mcp`: the REST routes as MCP tools over streamable HTTP, with giantswarm/vm-manager's tool
 * names, behind the same bearer token. Each tool is one row of ROUTES and is answered by the REST
 * handler itself (called in-process with the row's method and path), so the JSON an agent gets is
 * byte for byte what REST answers and no route logic is written twice. A REST error becomes an MCP
 * tool error carrying the same {"error":{"code","message"}}.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { createNetworkRequestSchema, createVmRequestSchema, execRequestSchema, forwardRequestSchema } from '../vm-api/schemas';
import { tokenOk } from './api-http';
import { listZodIssues } from '../../shared/contract/errors';

type Verb = 'GET' | 'POST' | 'DELETE';
type Kind = 'read' | 'write' | 'destroy';

export interface McpRoute {
  tool: string;
  verb: Verb;
  /** Under /api/v1; `{id}` / `{ref}` are filled from the tool's arguments. */
  path: string;
  summary: string;
  kind: Kind;
  /** The request body's schema (POST); the REST handler validates it again. */
  body?: z.ZodObject;
  /** Query parameters taken from the arguments. */
  query?: Record<string, z.ZodType>;
}

const vmId = lazySchema(() => z.string().min(1).max(64).describe('the VM id (8 hex characters)'));
const ref = lazySchema(() => z.string().min(1).max(200).describe('an image name in the store'));
const importBody = lazySchema(() =>
  z.object({ path: z.string().min(1).max(4096).describe('a file under the state dir'), name: z.string().max(63).optional() }).strict(),
);

export const ROUTES: McpRoute[] = [
  {
    tool: 'get_host',
    verb: 'GET',
    path: '/host',
    kind: 'read',
    summary: 'The host: accelerator chosen and why, QEMU/swtpm/OVMF found, what is missing. Call this first.',
  },
  {
    tool: 'list_images',
    verb: 'GET',
    path: '/images',
    kind: 'read',
    summary: 'Images in the store, with their attestation policy (golden PCR values) when they have one',
  },
  { tool: 'get_image', verb: 'GET', path: '/images/{ref}', kind: 'read', summary: 'One image of the store' },
  {
    tool: 'import_image',
    verb: 'POST',
    path: '/images',
    kind: 'write',
    body: importBody,
    summary: 'Import a disk or kernel image from a file under the state dir into the store',
  },
  { tool: 'list_vms', verb: 'GET', path: '/vms', kind: 'read', summary: 'VMs, oldest first' },
  {
    tool: 'create_vm',
    verb: 'POST',
    path: '/vms',
    kind: 'write',
    body: createVmRequestSchema,
    summary: 'Create and boot a VM; waits until wait_for (default ready: attested and READY=1), which can take minutes',
  },
  { tool: 'get_vm', verb: 'GET', path: '/vms/{id}', kind: 'read', summary: 'One VM record' },
  { tool: 'delete_vm', verb: 'DELETE', path: '/vms/{id}', kind: 'destroy', summary: 'Stop a VM and delete it with its disk and TPM state' },
  { tool: 'start_vm', verb: 'POST', path: '/vms/{id}/start', kind: 'write', summary: 'Start a stopped or failed VM' },
  {
    tool: 'stop_vm',
    verb: 'POST',
    path: '/vms/{id}/stop',
    kind: 'destroy',
    summary: 'Stop a running VM (powerdown, then SIGTERM, then SIGKILL)',
  },
  { tool: 'reboot_vm', verb: 'POST', path: '/vms/{id}/reboot', kind: 'destroy', summary: 'Reset a running VM' },
  {
    tool: 'get_vm_console',
    verb: 'GET',
    path: '/vms/{id}/console',
    kind: 'read',
    summary: 'The last lines of the VM serial console',
    query: { lines: z.number().int().min(1).max(10000).optional().describe('how many lines (default 100)') },
  },
  {
    tool: 'get_vm_attestation',
    verb: 'GET',
    path: '/vms/{id}/attestation',
    kind: 'read',
    summary: 'Attestation: stages, verdicts, the PCR table against golden values',
  },
  {
    tool: 'get_vm_metrics',
    verb: 'GET',
    path: '/vms/{id}/metrics',
    kind: 'read',
    summary: 'Per-VM metrics: state, attestation, QEMU CPU time and resident memory, disk size',
  },
  {
    tool: 'exec_vm',
    verb: 'POST',
    path: '/vms/{id}/exec',
    kind: 'destroy',
    body: execRequestSchema,
    summary: 'Run a command as root in the guest over SSH; a non-zero exit is a result (exitCode)',
  },
  {
    tool: 'forward_port',
    verb: 'POST',
    path: '/vms/{id}/forward',
    kind: 'write',
    body: forwardRequestSchema,
    summary: 'Expose a guest TCP port on a host loopback address until the VM is deleted',
  },
  {
    tool: 'list_networks',
    verb: 'GET',
    path: '/networks',
    kind: 'read',
    summary: 'The networks (default and nat always exist), with their leases',
  },
  {
    tool: 'create_network',
    verb: 'POST',
    path: '/networks',
    kind: 'write',
    body: createNetworkRequestSchema,
    summary: 'Create a network (restricted: the guest reaches the metadata service and its forwards only)',
  },
  { tool: 'get_network', verb: 'GET', path: '/networks/{name}', kind: 'read', summary: 'One network' },
  { tool: 'delete_network', verb: 'DELETE', path: '/networks/{name}', kind: 'destroy', summary: 'Delete a network no VM is attached to' },
];

function argsSchema(r: McpRoute): z.ZodObject {
  const params: Record<string, z.ZodType> = {};
  if (r.path.includes('{id}')) params.id = vmId;
  if (r.path.includes('{ref}')) params.ref = ref;
  if (r.path.includes('{name}')) params.name = z.string().min(1).max(63).describe('the network name');
  const base = r.body ?? z.object({}).strict();
  return base.extend({ ...params, ...r.query }).strict();
}

function toTool(r: McpRoute): Tool {
  const json = z.toJSONSchema(argsSchema(r), { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return {
    name: r.tool,
    description: `${r.summary} (${r.verb} /api/v1${r.path})`,
    inputSchema: { ...json, type: 'object' } as Tool['inputSchema'],
    annotations: {
      readOnlyHint: r.kind === 'read',
      destructiveHint: r.kind === 'destroy',
      idempotentHint: r.kind !== 'write',
      openWorldHint: false,
    },
  };
}

type RestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Calls the REST handler in-process; resolves with its status and body text. */
function callRest(rest: RestHandler, token: string, verb: Verb, url: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = Object.assign(Readable.from(body === undefined ? [] : [Buffer.from(JSON.stringify(body))]), {
      method: verb,
      url,
      headers: { authorization: `Bearer ${token}` },
    });
    let status = 200;
    const res = {
      headersSent: false,
      writeHead(s: number) {
        status = s;
        res.headersSent = true;
        return res;
      },
      end(text?: string) {
        resolve({ status, text: text ?? '' });
        return res;
      },
    };
    rest(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  });
}

function text(body: unknown, isError = false): CallToolResult {
  const structured = body !== null && typeof body === 'object' && !Array.isArray(body);
  return {
    content: [{ type: 'text', text: JSON.stringify(body, null, 2) }],
    ...(structured ? { structuredContent: body as Record<string, unknown> } : {}),
    ...(isError ? { isError: true } : {}),
  };
}

/** The server's own instructions: the call order a model reads before its first call (vm-manager-lab.md). */
export const MCP_INSTRUCTIONS =
  'Call get_host first, then list_images and list_networks, then create_vm (naming one of those networks). ' +
  "Records and errors have the REST API's JSON shapes.";

function mcpServer(rest: RestHandler, token: string): Server {
  const server = new Server(
    { name: 'vm-manager', title: 'POV Desk vm-manager', version: '1' },
    {
      capabilities: { tools: {} },
      instructions: MCP_INSTRUCTIONS,
    },
  );
  const tools = ROUTES.map(toTool);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const route = ROUTES.find((r) => r.tool === req.params.name);
    if (!route)
      return text({ error: { code: 'not_found', message: `no tool ${JSON.stringify(req.params.name)}; tools/list names them` } }, true);
    const parsed = argsSchema(route).safeParse(req.params.arguments ?? {});
    if (!parsed.success) {
      const message = listZodIssues(parsed.error, 'arguments');
      return text({ error: { code: 'invalid_request', message } }, true);
    }
    const { id, ref: image, ...rest2 } = parsed.data as Record<string, unknown>;
    const netName = route.path.includes('{name}') ? String(rest2.name) : '';
    if (route.path.includes('{name}')) delete rest2.name;
    let path = route.path
      .replace('{id}', encodeURIComponent(String(id)))
      .replace('{ref}', encodeURIComponent(String(image)))
      .replace('{name}', encodeURIComponent(netName));
    const query = new URLSearchParams();
    for (const k of Object.keys(route.query ?? {})) {
      if (rest2[k] !== undefined) query.set(k, String(rest2[k]));
      delete rest2[k];
    }
    if (query.size) path += `?${query}`;
    const answer = await callRest(rest, token, route.verb, `/api/v1${path}`, route.body ? rest2 : undefined);
    if (answer.status === 204) return text({ ...(netName ? { name: netName } : { id }), deleted: true });
    const body = answer.text ? (JSON.parse(answer.text) as unknown) : null;
    return text(body, answer.status >= 400);
  });
  return server;
}

export const isMcpPath = (url: string | undefined) => /^\/mcp\/?(\?|$)/.test(url ?? '');

/** The `/mcp` endpoint: stateless streamable HTTP, one server per request, the REST token required. */
export function createMcpHandler(opts: { token: string; rest: RestHandler }) {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (!tokenOk(req.headers.authorization, opts.token)) {
      const body = JSON.stringify({
        error: {
          code: 'unauthorized',
          message: 'missing or wrong bearer token: send "Authorization: Bearer <token>" (printed by `povdesk vm-manager serve`)',
        },
      });
      res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer' }).end(body);
      return;
    }
    answerStateless(mcpServer(opts.rest, opts.token), req, res, (e) => {
      if (!res.headersSent)
        res
          .writeHead(500, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ error: { code: 'internal_error', message: String((e as Error)?.message ?? e) } }));
    });
  };
}

/** Answers one streamable-HTTP request with a fresh transport for `server` (stateless: no session, JSON answers). */
export function answerStateless(server: Server, req: IncomingMessage, res: ServerResponse, onError: (e: unknown) => void): void {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  server
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
    .catch(onError);
}
