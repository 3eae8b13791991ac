import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { AppError, methods, toWireError, type MethodName } from '../../shared/contract';
import { hintTags, methodHints, SECRET_ARGS_ADVICE } from '../../shared/contract/annotations';
import { DEPRECATED_METHOD_NAMES, deprecationNote } from '../../shared/contract/deprecated-names';
import { APP_VERSION } from '../../shared/version';
import { createCore, type Core } from '../core/create';
import { startHost } from '../host/server';
import { rendererDir } from '../host/static-dir';
import { parseFlags } from '../lib/flags';
import { callMethod } from './call';
import { openInBrowser } from './open';
import { subcommands } from './subcommands';

const USAGE = `povdesk ${APP_VERSION} — POV Desk from the command line

  povdesk call <method> '<json args>' [--wait]   run one contract method, print its JSON result
                                                 (in the running app or serve when one owns the data
                                                 directory; --wait follows its job, progress on stderr)
  povdesk call <method> - [--wait]               the same, the JSON read from standard input
  povdesk call <method> @<file> [--wait]         the same, the JSON read from a file: use - or @ for
                                                 secrets (tokens, passwords, keys), since a command
                                                 line is readable by every local user
  povdesk serve [--port N] [--open]              run browser mode; prints the URL with its token
                                                 (refused while another process owns the directory)
  povdesk vm-manager <serve|image …|test>        the local vm-manager; "test" proves this laptop runs
                                                 VMs (see povdesk vm-manager --help)
  povdesk mcp                                    an MCP server on stdio for an assistant: one tool per
                                                 method not marked "not over MCP" (docs/mcp.md)
  povdesk doctor [--bundle] [--json]             check every account read-only against what POV Desk
                                                 assumes (and write a support bundle)
  povdesk --help                                 this text and every method with its arguments

POVDESK_HOME sets the data directory. SKYTAP_USERNAME, SKYTAP_API_TOKEN, SKYTAP_URL and
SKYTAP_PROJECT_ID override stored Skytap settings for this process and are never saved.
POVDESK_VMM_TOKEN (or --token-file with a 0600 file) gives vm-manager serve its API token.
Errors print {"error":{"code","message"}} on stderr and exit 1.`;

/** A compact, readable argument shape for --help, derived from the contract's schema. */
function describeArgs(schema: z.ZodType): string {
  const json = z.toJSONSchema(schema, { unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: string | string[]; enum?: unknown[]; anyOf?: unknown[] }>;
    required?: string[];
  };
  const props = json.properties ?? {};
  const names = Object.keys(props);
  if (names.length === 0) return '{}';
  const req = new Set(json.required ?? []);
  const parts = names.map((n) => {
    const p = props[n]!;
    const type = p.enum ? p.enum.map((e) => JSON.stringify(e)).join('|') : Array.isArray(p.type) ? p.type.join('|') : (p.type ?? 'value');
    return `${n}${req.has(n) ? '' : '?'}: ${type}`;
  });
  return `{ ${parts.join(', ')} }`;
}

export function helpText(): string {
  const lines = (Object.keys(methods) as MethodName[]).sort().map((name) => {
    const def = methods[name];
    return (
      `  ${name.padEnd(28)} ${describeArgs(def.args)}${'job' in def && def.job ? '  → job' : ''}` +
      `\n      ${def.summary}\n      ${hintTags(methodHints[name])}`
    );
  });
  const old = Object.entries(DEPRECATED_METHOD_NAMES).map(([name, now]) => `  ${name.padEnd(28)} ${deprecationNote(name, now)}`);
  return (
    `${USAGE}\n\nMethods:\n${lines.join('\n')}\n\n` +
    `Old names (povdesk call and the MCP server take them until the next release):\n${old.join('\n')}\n`
  );
}

interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
  /** All of standard input, for `povdesk call <method> -`. */
  stdin?: () => Promise<string>;
}

function fail(io: Io, err: unknown): number {
  io.err(JSON.stringify({ error: toWireError(err) }) + '\n');
  return 1;
}

/** A subcommand's flags (node:util parseArgs); an unknown one is refused naming it and `povdesk --help`. */
function cliFlags<const O extends Parameters<typeof parseFlags>[1]>(args: string[], options: O) {
  return parseFlags(args, options, 'povdesk --help', (message) => new AppError('invalid_request', message));
}

export async function runCli(argv: string[], io: Io = defaultIo()): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.out(helpText());
    return 0;
  }
  if (cmd === '--version') {
    io.out(APP_VERSION + '\n');
    return 0;
  }
  if (cmd === 'call') return call(rest, io);
  if (cmd === 'serve') return serve(rest, io);
  const sub = subcommands[cmd];
  if (sub) return sub(rest);
  return fail(io, new AppError('invalid_request', `unknown command ${JSON.stringify(cmd)}; see povdesk --help`));
}

async function call(args: string[], io: Io): Promise<number> {
  let flags;
  try {
    flags = cliFlags(args, { wait: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
  } catch (err) {
    return fail(io, err);
  }
  if (flags.values.help) {
    io.out(helpText());
    return 0;
  }
  const wait = flags.values.wait === true;
  const positional = flags.positionals;
  const [method, json] = positional;
  if (!method) return fail(io, new AppError('invalid_request', "usage: povdesk call <method> '<json>' [--wait]"));
  let parsedArgs: unknown = {};
  if (json !== undefined) {
    let text: string;
    try {
      text = await argsText(io, method, json);
      parsedArgs = JSON.parse(text);
    } catch (e) {
      return fail(io, e instanceof AppError ? e : new AppError('invalid_request', `the arguments are not JSON: ${(e as Error).message}`));
    }
  }
  if (positional.length > 2) return fail(io, new AppError('invalid_request', 'too many arguments; pass one JSON object'));
  try {
    return await callMethod(io, method, parsedArgs, wait);
  } catch (err) {
    return fail(io, err);
  }
}

/** The JSON argument: standard input for `-`, a file for `@path`, else the argument itself (warned about when it carries a secret). */
async function argsText(io: Io, method: string, arg: string): Promise<string> {
  if (arg === '-') return (io.stdin ?? readStdin)();
  if (arg.startsWith('@')) {
    try {
      return readFileSync(arg.slice(1), 'utf8');
    } catch (e) {
      throw new AppError(
        'invalid_request',
        `cannot read the arguments file ${arg.slice(1)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): give ` +
          `@<path> of a JSON file`,
      );
    }
  }
  const secret = (methodHints as Record<string, { takesSecret?: string }>)[method]?.takesSecret;
  if (secret)
    io.err(
      `warning: ${method} takes ${secret}, and this command line is readable by every local user (ps, ` +
        `/proc/<pid>/cmdline); ${SECRET_ARGS_ADVICE}\n`,
    );
  return arg;
}

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    process.stdin.on('data', (d: Buffer) => parts.push(d));
    process.stdin.once('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    process.stdin.once('error', reject);
  });
}

async function serve(args: string[], io: Io): Promise<number> {
  let flags;
  try {
    flags = cliFlags(args, { port: { type: 'string' }, open: { type: 'boolean' } });
    if (flags.positionals.length)
      throw new AppError('invalid_request', `serve takes no argument ${JSON.stringify(flags.positionals[0])}; see povdesk --help`);
  } catch (err) {
    return fail(io, err);
  }
  let port: number | undefined;
  if (flags.values.port !== undefined) {
    port = flags.values.port.trim() === '' ? NaN : Number(flags.values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return fail(io, new AppError('invalid_request', '--port takes a number from 0 to 65535'));
    }
  }
  let core: Core;
  try {
    // Beside a running owner this refuses, naming its pid and how to reach it (owner.ts).
    core = await createCore({ env: io.env, role: 'app', ownerKind: 'serve', logName: 'host' });
  } catch (err) {
    return fail(io, err);
  }
  let host;
  try {
    host = await startHost({ core, port, staticDir: rendererDir(io.env) });
  } catch (err) {
    await core.close();
    return fail(io, err);
  }
  // owner.json names the address only: the launch token stays with the process that printed it.
  core.owner.describe({ url: host.url });
  io.out(`POV Desk is serving ${host.openUrl}\n`);
  // The opener gets a one-time code, not the token: its command line is readable by every local user.
  if (flags.values.open) openInBrowser(host.launchUrl(), core.base.log);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await host.close();
  await core.close();
  return 0;
}

function defaultIo(): Io {
  return { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), env: process.env };
}
