import { appendFileSync, existsSync, mkdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

export type Level = 'info' | 'warn' | 'error';

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** Every later line has this value replaced by [redacted]. */
  addSecret(value: string): void;
  /** The text with every registered secret and known pattern replaced (for text that leaves by another way: job records, diagnostics). */
  scrub(text: string): string;
  readonly file: string | null;
}

const SECRET_KEYS = /(token|password|passphrase|secret|authorization|private_?key|api_?key)/i;
const PATTERNS: [RegExp, string][] = [
  [/(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]{6,}/g, '$1 [redacted]'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, '[redacted private key]'],
  [/(token\.)[A-Za-z0-9_-]{8,}/g, '$1[redacted]'],
];

/** Replaces values of secret-looking keys, then known patterns and registered secret strings. */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  for (const [re, rep] of PATTERNS) out = out.replace(re, rep);
  return out;
}

/**
 * A copy safe to serialise: a secret-named key at any depth (objects and arrays) becomes
 * [redacted], an Error keeps its name, message and code (JSON would drop them as `{}`, and the
 * message is then redacted with the rest of the line), a cycle or a very deep value is cut.
 */
function redactValue(v: unknown, path: object[]): unknown {
  if (v instanceof Error) {
    const code = (v as { code?: unknown }).code;
    return { name: v.name, message: v.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  if (typeof v === 'bigint') return String(v);
  if (v === null || typeof v !== 'object') return v;
  if (ArrayBuffer.isView(v)) return `[${v.byteLength} bytes]`;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return redactValue((v as { toJSON(): unknown }).toJSON(), path);
  if (path.includes(v)) return '[circular]';
  if (path.length >= 12) return '[too deep]';
  const next = [...path, v];
  if (Array.isArray(v)) return v.map((x) => redactValue(x, next));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redactValue(x, next);
  return out;
}

function redactFields(fields: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return fields ? (redactValue(fields, []) as Record<string, unknown>) : undefined;
}

/**
 * A line-per-event JSON logger writing to <dir>/<name>.log, rotated at maxBytes into .1 … .keep.
 * Writes are synchronous so that nothing logged before a crash is lost.
 */
export function createLogger(opts: { dir: string | null; name: string; maxBytes?: number; keep?: number; echo?: boolean }): Logger {
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;
  const keep = opts.keep ?? 3;
  const secrets = new Set<string>();
  let file: string | null = null;
  if (opts.dir) {
    mkdirSync(opts.dir, { recursive: true });
    file = join(opts.dir, `${opts.name}.log`);
  }
  const rotate = () => {
    if (!file || !existsSync(file) || statSync(file).size < maxBytes) return;
    for (let i = keep - 1; i >= 1; i--) {
      const from = `${file}.${i}`;
      if (existsSync(from)) renameSync(from, `${file}.${i + 1}`);
    }
    if (existsSync(`${file}.${keep + 1}`)) unlinkSync(`${file}.${keep + 1}`);
    renameSync(file, `${file}.1`);
  };
  const write = (level: Level, message: string, fields?: Record<string, unknown>) => {
    const line = redact(
      JSON.stringify({ at: new Date().toISOString(), level, pid: process.pid, message, ...redactFields(fields) }),
      secrets,
    );
    if (opts.echo) process.stderr.write(line + '\n');
    if (!file) return;
    try {
      rotate();
      appendFileSync(file, line + '\n');
    } catch {
      // A full disk must not take the app down; the line is lost.
    }
  };
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    addSecret: (v) => {
      if (v) secrets.add(v);
    },
    scrub: (text) => redact(text, secrets),
    file,
  };
}
