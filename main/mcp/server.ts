/**
 * POV Desk as an MCP server, derived from the contract: one tool per method (its name with `.`
 * as `_`, since assistants accept only [A-Za-z0-9_-] in tool names), its input schema zod 4's JSON
 * Schema of the method's arguments, its description the method's summary, its annotations from
 * shared/contract/annotations.ts. Methods marked `notOverMcp` (they take a secret) are not listed
 * and refused by name. Calls go through a Backend whose `call` is the Dispatcher (in this process
 * or in the owner), so arguments are checked exactly as for every other transport. Job methods
 * return `{ jobId }`; `jobs_wait` follows a job with progress notifications.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { AppError, describeZodError, methods, toWireError, type JobRecord, type MethodName } from '../../shared/contract';
import { methodHints } from '../../shared/contract/annotations';
import { DEPRECATED_METHOD_NAMES, deprecationNote } from '../../shared/contract/deprecated-names';
import { deadline } from '../lib/sleep';
import { FINISHED } from './core-backend';
import { APP_VERSION } from '../../shared/version';

export interface McpBackend {
  /** One contract call through the Dispatcher. */
  call(method: string, args: unknown): Promise<unknown>;
  /**
   * Follows a job: every snapshot to `onJob`; resolves with the finished record, or the latest one
   * once `stop` aborts. Rejects with not_found for an unknown id.
   */
  follow(jobId: string, onJob: (job: JobRecord) => void, stop: AbortSignal): Promise<JobRecord>;
}

export const toolName = (method: string) => method.replace(/\./g, '_');
export const JOBS_WAIT = 'jobs_wait';

export const jobsWaitArgs = lazySchema(() =>
  z
    .object({
      id: z.string().min(1).max(200),
      /** How long to wait before answering with the job as it is (call again to keep waiting). */
      timeoutSeconds: z.number().int().min(1).max(600).optional(),
    })
    .strict(),
);
const DEFAULT_WAIT_S = 50; // under the 60 s request timeout most clients use

function inputSchema(schema: z.ZodType): Tool['inputSchema'] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return { ...json, type: 'object' } as Tool['inputSchema'];
}

let cached: Tool[] | null = null;

/** The tools for every method offered over MCP, plus jobs_wait (built once: the contract does not change). */
export function povdeskTools(): Tool[] {
  if (cached) return cached;
  const tools: Tool[] = [];
  for (const name of Object.keys(methods) as MethodName[]) {
    const hints = methodHints[name];
    if ('notOverMcp' in hints) continue;
    const def = methods[name];
    const job = 'job' in def && def.job;
    tools.push({
      name: toolName(name),
      title: name,
      description: def.summary + (job ? `. Returns {jobId} at once; follow it with ${JOBS_WAIT}.` : ''),
      inputSchema: inputSchema(def.args),
      annotations: {
        readOnlyHint: hints.readOnly,
        destructiveHint: hints.destructive,
        idempotentHint: hints.idempotent,
        openWorldHint: false,
      },
    });
  }
  // The previous release's names, listed after the current ones as deprecated copies of them.
  for (const [old, now] of Object.entries(DEPRECATED_METHOD_NAMES)) {
    const tool = tools.find((t) => t.name === toolName(now));
    if (tool)
      tools.push({
        ...tool,
        name: toolName(old),
        title: old,
        description: `${deprecationNote(toolName(old), toolName(now))}. ${tool.description}`,
      });
  }
  tools.push({
    name: JOBS_WAIT,
    title: 'jobs.wait',
    description:
      `Wait for a job (from a tool that returned {jobId}) to end, with progress notifications; answers {job, finished} after ` +
      `timeoutSeconds (default ${DEFAULT_WAIT_S}) if it still runs — call again to keep waiting. A failed job is a tool error with ` +
      `the job's error code.`,
    inputSchema: inputSchema(jobsWaitArgs),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  });
  return (cached = tools);
}

function ok(value: unknown, note?: string): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(value, null, 2) }];
  if (note) content.push({ type: 'text', text: note });
  const structured = value !== null && typeof value === 'object' && !Array.isArray(value);
  return structured ? { content, structuredContent: value as Record<string, unknown> } : { content };
}

/** A contract error as an MCP tool error: `{"error":{"code","message"}}`, as `povdesk call` prints it. */
export function toolError(err: unknown, extra: Record<string, unknown> = {}): CallToolResult {
  const { code, message } = toWireError(err);
  const body = { error: { code, message }, ...extra };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

export function createPovdeskMcpServer(backend: McpBackend): Server {
  const server = new Server(
    { name: 'povdesk', title: 'POV Desk', version: APP_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'POV Desk runs proof-of-value demos on Skytap and rehearses them on local VMs. Start with settings_get and pov_list; ' +
        `tools that start long work return {jobId}: follow it with ${JOBS_WAIT}. Secrets are never returned and cannot be set here.`,
    },
  );
  const tools = povdeskTools();
  const byTool = new Map<string, MethodName>([
    ...(Object.keys(methods) as MethodName[]).map((m) => [toolName(m), m] as const),
    ...Object.entries(DEPRECATED_METHOD_NAMES).map(([old, now]) => [toolName(old), now] as const),
  ]);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: args } = req.params;
    try {
      if (name === JOBS_WAIT) {
        const token = req.params._meta?.progressToken;
        let n = 0;
        let last = '';
        const progress = (job: JobRecord) => {
          const p = job.progress;
          const line =
            `[${job.state}] ${p.step || job.kind}` +
            `${p.fraction === null ? '' : ` ${Math.round(p.fraction * 100)}%`}${p.message ? ` — ${p.message}` : ''}`;
          if (token === undefined || line === last) return;
          last = line;
          // progress only ever grows (the spec requires it); the percent, when known, is in the message
          void extra
            .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++n, message: line } })
            .catch(() => {});
        };
        return await waitTool(backend, args, progress, extra.signal);
      }
      const target = byTool.get(name);
      if (!target) throw new AppError('invalid_request', `unknown tool ${JSON.stringify(name)}; tools/list names them`);
      const hints = methodHints[target];
      if ('notOverMcp' in hints) throw new AppError('forbidden', `${target} is not offered over MCP: it ${hints.notOverMcp}`);
      const result = await backend.call(target, args ?? {});
      const def = methods[target];
      const jobId = 'job' in def && def.job ? (result as { jobId: string }).jobId : null;
      return ok(result, jobId ? `job ${jobId} started; follow it with ${JOBS_WAIT} {"id":"${jobId}"}` : undefined);
    } catch (err) {
      return toolError(err);
    }
  });
  return server;
}

async function waitTool(
  backend: McpBackend,
  args: unknown,
  onJob: (job: JobRecord) => void,
  cancelled: AbortSignal,
): Promise<CallToolResult> {
  const parsed = jobsWaitArgs.safeParse(args ?? {});
  if (!parsed.success) throw new AppError('invalid_request', describeZodError(`invalid arguments for ${JOBS_WAIT}`, parsed.error));
  const stop = deadline((parsed.data.timeoutSeconds ?? DEFAULT_WAIT_S) * 1000, cancelled);
  const job = await backend.follow(parsed.data.id, onJob, stop.signal).finally(stop.clear);
  const finished = FINISHED.has(job.state);
  if (finished && job.state !== 'succeeded') {
    const error = job.error ?? { code: job.state === 'cancelled' ? 'cancelled' : 'internal', message: `job ${job.id} ended ${job.state}` };
    return toolError(new AppError(error.code, error.message), { job, finished });
  }
  return ok({ job, finished });
}
