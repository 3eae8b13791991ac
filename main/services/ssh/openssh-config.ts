/**
 * The SE's own `~/.ssh/config`, read (never written) so a host their `ssh web1` reaches can be
 * filled into a profile without typing its address, user, port and jump hosts again.
 *
 * What is read (ssh_config(5)): `Host` blocks (whitespace-separated patterns, `*` and `?`, `!`
 * negation, matched case-insensitively against the name typed), the first value obtained for each
 * keyword (IdentityFile accumulates), `Include` (glob in the last path component; relative paths
 * are under ~/.ssh; an include inside a block that does not apply never applies, and its own
 * `Host` lines do not change the including file's block), and HostName's `%h` and `%%` tokens.
 * Jump hosts (`ProxyJump a,user@b:2201`) are resolved through the same file, as ssh does.
 * `Match` blocks are not evaluated: their lines are skipped and the listing says so. ProxyCommand
 * is reported, not used (POV Desk connects through ProxyJump hops only).
 *
 * The file is untrusted input: a line that does not parse is skipped and named in `problems`, a
 * file over 1 MB is not read, includes stop 16 deep (OpenSSH's own limit).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { patternsMatch as hostPatternsMatch, wildcard } from './openssh-known-hosts';

export interface OpensshHop {
  host: string;
  port: number;
  username: string;
}

export interface OpensshHost extends OpensshHop {
  /** The name on the `Host` line, as typed after `ssh`. */
  alias: string;
  /** Jump hosts in connection order (ProxyJump, each resolved through the file). */
  jump: OpensshHop[];
  /** IdentityFile values in order, `~` and `%d` expanded. */
  identityFiles: string[];
  /** ServerAliveInterval, when the file sets one. */
  keepaliveSec: number | null;
  /** Set when the host is reached through ProxyCommand, which POV Desk does not run. */
  proxyCommand: string | null;
}

export interface OpensshConfig {
  file: string;
  hosts: OpensshHost[];
  problems: string[];
}

const MAX_FILE_BYTES = 1024 * 1024;
const MAX_DEPTH = 16;
const KEYS = new Set(['hostname', 'user', 'port', 'proxyjump', 'identityfile', 'serveraliveinterval', 'proxycommand']);

interface Line {
  /** The Host pattern lists in force, each of which must match: the including blocks' and its own. */
  conds: string[][];
  /** Inside a Match block, or an include from a Match block. */
  never: boolean;
  key: string;
  value: string;
}

interface Collected {
  lines: Line[];
  /** Names on Host lines without wildcards or negation, in file order. */
  aliases: string[];
  problems: string[];
}

/** `Keyword value`, `Keyword=value`, `Keyword = "quoted value"`; null for blanks and comments. */
export function splitLine(raw: string): { key: string; args: string[] } | null {
  const line = raw.trim();
  if (!line || line.startsWith('#')) return null;
  const m = /^([A-Za-z]+)(?:\s*=\s*|\s+)(.*)$/.exec(line);
  if (!m) return { key: line.toLowerCase(), args: [] };
  const args: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let t = re.exec(m[2]!); t; t = re.exec(m[2]!)) {
    if (t[2]?.startsWith('#')) break; // a trailing comment
    args.push(t[1] ?? t[2]!);
  }
  return { key: m[1]!.toLowerCase(), args };
}

function readLimited(file: string): string | null {
  const st = statSync(file);
  if (!st.isFile()) return null;
  if (st.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES / 1024 / 1024} MB`);
  return readFileSync(file, 'utf8');
}

/** Include's files: a path, or a glob in its last component, relative ones under ~/.ssh. */
function includeFiles(arg: string, home: string): string[] {
  const p = arg.startsWith('~/') ? join(home, arg.slice(2)) : isAbsolute(arg) ? arg : join(home, '.ssh', arg);
  const name = basename(p);
  if (!/[*?]/.test(name)) return [p];
  try {
    return readdirSync(dirname(p))
      .filter((n) => !n.startsWith('.') && wildcard(name, n, false))
      .sort()
      .map((n) => join(dirname(p), n));
  } catch {
    return [];
  }
}

function collect(file: string, home: string, depth: number, outer: string[][], never: boolean, c: Collected): void {
  let text: string | null;
  try {
    text = readLimited(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') c.problems.push(`${file}: not read (${code ?? (e as Error).message})`);
    return;
  }
  if (text === null) return;
  let conds = outer;
  let inMatch = false;
  let matchNoted = false;
  text.split('\n').forEach((raw, i) => {
    const l = splitLine(raw);
    if (!l) return;
    const where = `${file}:${i + 1}`;
    if (l.key === 'host') {
      if (!l.args.length) return void c.problems.push(`${where}: Host without a pattern, skipped`);
      conds = [...outer, l.args];
      inMatch = false;
      if (!never) c.aliases.push(...l.args.filter((p) => !/[*?!]/.test(p) && conds.every((o) => hostPatternsMatch(o, p))));
    } else if (l.key === 'match') {
      inMatch = true;
      if (!matchNoted) c.problems.push(`${where}: Match blocks are not read; their lines are skipped`);
      matchNoted = true;
    } else if (l.key === 'include') {
      if (depth >= MAX_DEPTH) return void c.problems.push(`${where}: Include nested more than ${MAX_DEPTH} deep, skipped`);
      // an include inside a Host block applies only to names that block matches, its own Host
      // blocks included; it does not change the including file's block
      for (const a of l.args) for (const f of includeFiles(a, home)) collect(f, home, depth + 1, conds, never || inMatch, c);
    } else if (KEYS.has(l.key)) {
      if (!l.args.length) return void c.problems.push(`${where}: ${l.key} without a value, skipped`);
      if (l.args.length > 1 && l.key !== 'proxycommand') return void c.problems.push(`${where}: ${l.key} takes one value, skipped`);
      c.lines.push({ conds, never: never || inMatch, key: l.key, value: l.key === 'proxycommand' ? l.args.join(' ') : l.args[0]! });
    }
  });
}

interface Resolved {
  hostname?: string;
  user?: string;
  port?: string;
  proxyjump?: string;
  serveraliveinterval?: string;
  proxycommand?: string;
  identityfile: string[];
}

/** What ssh would use for `name`: the first value of each keyword from the lines that apply. */
export function resolveLines(lines: Line[], name: string): Resolved {
  const r: Resolved = { identityfile: [] };
  for (const l of lines) {
    if (l.never || !l.conds.every((p) => hostPatternsMatch(p, name))) continue;
    if (l.key === 'identityfile') r.identityfile.push(l.value);
    else if (r[l.key as Exclude<keyof Resolved, 'identityfile'>] === undefined)
      r[l.key as Exclude<keyof Resolved, 'identityfile'>] = l.value;
  }
  return r;
}

/** ProxyJump's hops: `[user@]host[:port]` or `ssh://[user@]host[:port]`, comma-separated. */
export function parseJump(value: string): { host: string; port: number | null; user: string | null }[] | null {
  if (value.toLowerCase() === 'none') return [];
  const hops = [];
  for (const raw of value.split(',')) {
    const m = /^(?:ssh:\/\/)?(?:([^@\s]+)@)?(\[[^\]]+\]|[^:@\s]+)(?::(\d{1,5}))?$/.exec(raw.trim());
    if (!m) return null;
    hops.push({ host: m[2]!.replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : null, user: m[1] ?? null });
  }
  return hops;
}

/** ssh's default User: the local account's name. */
function localUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? '';
  }
}

/** Reads the config and resolves every concrete name on its Host lines (no wildcards, no `!`). */
export function readOpensshConfig(file: string, home = homedir(), localUser = localUserName()): OpensshConfig {
  const c: Collected = { lines: [], aliases: [], problems: [] };
  collect(file, home, 0, [], false, c);
  const { lines, problems } = c;
  const aliases = [...new Set(c.aliases)];
  const portOf = (v: string | undefined, where: string): number => {
    if (v === undefined) return 22;
    const n = Number(v);
    if (Number.isInteger(n) && n >= 1 && n <= 65535) return n;
    problems.push(`${where}: Port "${v}" is not a port number; 22 is used`);
    return 22;
  };
  const hop = (name: string, r: Resolved, user: string | null, port: number | null): OpensshHop => ({
    host: (r.hostname ?? name).replace(/%(%|h)/g, (_, t: string) => (t === 'h' ? name : '%')),
    port: port ?? portOf(r.port, name),
    username: user ?? r.user ?? localUser,
  });
  // each hop is connected to as `ssh hop` would be, its own ProxyJump first (ssh -J recurses)
  const chain = (value: string | undefined, seen: string[]): OpensshHop[] | null => {
    if (!value) return [];
    const hops = parseJump(value);
    if (!hops) return null;
    const out: OpensshHop[] = [];
    for (const h of hops) {
      if (seen.includes(h.host) || seen.length > 8) return null; // a loop, or deeper than a profile holds
      const r = resolveLines(lines, h.host);
      const before = chain(r.proxyjump, [...seen, h.host]);
      if (!before) return null;
      out.push(...before, hop(h.host, r, h.user, h.port));
    }
    return out;
  };
  const hosts: OpensshHost[] = [];
  for (const alias of aliases) {
    const r = resolveLines(lines, alias);
    const jump = chain(r.proxyjump, [alias]);
    if (!jump) problems.push(`${alias}: ProxyJump "${r.proxyjump}" is not understood (or loops); no jump hosts filled`);
    const keepalive = r.serveraliveinterval === undefined ? null : Number(r.serveraliveinterval);
    hosts.push({
      alias,
      ...hop(alias, r, null, null),
      jump: jump ?? [],
      identityFiles: r.identityfile.map((f) => f.replace(/^~(?=\/)/, home).replace(/%(%|d)/g, (_, t: string) => (t === 'd' ? home : '%'))),
      keepaliveSec: keepalive !== null && Number.isInteger(keepalive) && keepalive >= 0 ? keepalive : null,
      proxyCommand: r.proxycommand && r.proxycommand.toLowerCase() !== 'none' ? r.proxycommand : null,
    });
  }
  // a hop shared by several hosts would name its bad port once per host
  return { file, hosts, problems: [...new Set(problems)] };
}

/** The user's own file, as OpenSSH reads it by default. */
export function defaultOpensshConfig(home = homedir()): string {
  return join(home, '.ssh', 'config');
}
