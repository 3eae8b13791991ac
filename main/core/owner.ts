import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { AppError } from '../../shared/contract';
import { sqliteConnection } from '../services/store/db';
import { runtimeDir } from './private-endpoint';

/**
 * One owner per data directory. The owner holds an OS file lock on `<home>/owner.lock` through an
 * SQLite connection in exclusive locking mode with a transaction left open: the kernel drops the
 * lock when the process ends, however it ends (SIGKILL included), so a crashed owner's lock is
 * free at once and nothing ever guesses from a stale pid. Only the owner runs jobs, marks rows
 * interrupted, resumes and sweeps; it also answers on a local endpoint (owner-endpoint.ts) so a
 * second `povdesk call` becomes its client.
 */

export type OwnerKind = 'app' | 'serve' | 'cli' | 'test';

export interface OwnerInfo {
  pid: number;
  kind: OwnerKind;
  startedAt: string;
  /** Browser mode's URL (with its token) when the owner is `povdesk serve`. */
  url?: string;
  /** The owner's MCP endpoint (streamable HTTP on loopback; bearer = mcp.token), when it serves one. */
  mcpUrl?: string;
}

const ownerInfo = lazySchema(() =>
  z
    .object({
      pid: z.number().int().positive(),
      kind: z.enum(['app', 'serve', 'cli', 'test']),
      startedAt: z.string().max(40),
      url: z.string().max(500).optional(),
      mcpUrl: z.string().max(200).optional(),
    })
    .strict(),
);

export function ownerFiles(home: string) {
  return {
    lock: join(home, 'owner.lock'),
    info: join(home, 'owner.json'),
    token: join(home, 'owner.token'),
    /** The MCP HTTP endpoint's bearer token: its own, so the socket's token opens nothing on TCP. */
    mcpToken: join(home, 'mcp.token'),
    endpoint: ownerEndpoint(home),
  };
}

/**
 * `<home>/owner.sock`, or a named pipe on Windows. A Unix socket path is limited to ~104 bytes, so
 * a deep home gets its socket in this user's private runtime directory (private-endpoint.ts),
 * named after a hash of the home. A pipe's name is global to the machine and any user may create
 * it first, so it is derived from the owner's token (owner.token, readable by this user only):
 * nobody else can know it before the owner creates it, and Node creates a server's first instance
 * with FILE_FLAG_FIRST_PIPE_INSTANCE, so nobody can add an instance once it exists.
 */
export function ownerEndpoint(home: string): string {
  const hash = createHash('sha256').update(home).digest('hex').slice(0, 16);
  if (process.platform === 'win32') {
    const secret = createHash('sha256')
      .update(`${home}\0${readToken(join(home, 'owner.token')) ?? ''}`)
      .digest('hex')
      .slice(0, 32);
    return `\\\\.\\pipe\\povdesk-${secret}`;
  }
  const inHome = join(home, 'owner.sock');
  return Buffer.byteLength(inHome) <= 100 ? inHome : join(runtimeDir(), `povdesk-${hash}.sock`);
}

export interface OwnerLock {
  readonly home: string;
  readonly token: string;
  /** The bearer token of the owner's MCP HTTP endpoint (mcp.token). */
  readonly mcpToken: string;
  /** Rewrites owner.json (e.g. once `serve` knows its URL). */
  describe(extra: Partial<Pick<OwnerInfo, 'url' | 'mcpUrl'>>): void;
  release(): void;
}

/** Reads owner.json; null when absent or unreadable (it is advice for messages, never proof). */
export function readOwnerInfo(home: string): OwnerInfo | null {
  try {
    const parsed = ownerInfo.safeParse(JSON.parse(readFileSync(ownerFiles(home).info, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The owner's token, for a client; null when there is none. */
export function readOwnerToken(home: string): string | null {
  return readToken(ownerFiles(home).token);
}

function readToken(file: string): string | null {
  try {
    const t = readFileSync(file, 'utf8').trim();
    return /^[A-Za-z0-9_-]{20,100}$/.test(t) ? t : null;
  } catch {
    return null;
  }
}

function writePrivate(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600); // an existing file keeps its old mode through writeFileSync
}

/** Takes the lock without waiting; null when another process (or this one) already holds it. */
export function tryAcquireOwnerLock(home: string, kind: OwnerKind): OwnerLock | null {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const files = ownerFiles(home);
  const db = sqliteConnection(files.lock, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY' || (err as { code?: string }).code === 'SQLITE_LOCKED') return null;
    throw err;
  }
  const token = randomBytes(24).toString('base64url');
  const mcpToken = randomBytes(24).toString('base64url');
  let info: OwnerInfo = { pid: process.pid, kind, startedAt: new Date().toISOString() };
  writePrivate(files.token, token + '\n');
  writePrivate(files.mcpToken, mcpToken + '\n');
  writePrivate(files.info, JSON.stringify(info) + '\n');
  let held = true;
  return {
    home,
    token,
    mcpToken,
    describe(extra) {
      info = { ...info, ...extra };
      if (held) writePrivate(files.info, JSON.stringify(info) + '\n');
    },
    release() {
      if (!held) return;
      held = false;
      db.close(); // drops the lock; the next owner overwrites owner.json and owner.token
    },
  };
}

/** What a process that could not take the lock tells the user. */
export function ownerBusyError(home: string): AppError {
  const info = readOwnerInfo(home);
  const who = info ? `pid ${info.pid} (${describeKind(info.kind)}, since ${info.startedAt})` : 'another process';
  const how =
    info?.kind === 'serve' && info.url
      ? ` Open the URL it printed (${info.url}#token=…) or stop that process first.`
      : ' `povdesk call …` talks to it; stop it first to start another.';
  return new AppError('conflict', `POV Desk already runs for the data directory ${home}: ${who}.${how}`, {
    owner: info ?? null,
  });
}

export function isOwnerBusy(err: unknown): boolean {
  return (
    err instanceof AppError && err.code === 'conflict' && typeof err.detail === 'object' && err.detail !== null && 'owner' in err.detail
  );
}

function describeKind(kind: OwnerKind): string {
  return kind === 'app'
    ? 'the POV Desk app'
    : kind === 'serve'
      ? '`povdesk serve`'
      : kind === 'cli'
        ? 'a `povdesk call` running a job'
        : 'a test';
}
