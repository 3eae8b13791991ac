import { createHash } from 'node:crypto';
import { AppError } from '../../../shared/contract/errors';
import { sleep } from '../../lib/sleep';

export interface TypeTarget {
  write(data: string): boolean;
  observe(fn: (chunk: Buffer) => void): () => void;
}

export interface TypeOptions {
  /** Where the script lands on the other side. */
  path?: string;
  /** Pause after each line's echo (or after echoTimeoutMs without one). */
  lineDelayMs?: number;
  echoTimeoutMs?: number;
  resultTimeoutMs?: number;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

export interface TypeResult {
  match: boolean;
  expected: string;
  actual: string | null;
  lines: number;
  bytes: number;
  path: string;
}

const MARKER = 'POVDESK_TYPED_EOF';
/** The canonical tty line buffer holds 4095 bytes; stay well below. */
const MAX_LINE = 1000;

/** What the remote file will contain: the script's lines, each ended by a newline. */
export function typedContent(script: string): string {
  const lines = script.replace(/\r\n/g, '\n').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => l + '\n').join('');
}

/**
 * Types `script` into a shell on a console (serial or ssh) as a quoted here-document, one line at
 * a time, waiting for each line's echo so a slow serial line never overruns the tty buffer, then
 * runs `sha256sum` on the file and compares it with the hash of what was meant to arrive.
 */
export async function typeInto(t: TypeTarget, script: string, o: TypeOptions = {}): Promise<TypeResult> {
  const content = typedContent(script);
  const lines = content.split('\n').slice(0, -1);
  const path = o.path ?? '/tmp/povdesk-typed.sh';
  // The path goes into a shell command line: letters, digits and . _ - / only.
  if (!/^\/[A-Za-z0-9._/-]+$/.test(path)) {
    throw new AppError('invalid_request', `target path ${JSON.stringify(path)} must be absolute and use only letters, digits, . _ - /`);
  }
  for (const [i, l] of lines.entries()) {
    if (l.length > MAX_LINE)
      throw new AppError('invalid_request', `line ${i + 1} is ${l.length} characters; a console line holds ${MAX_LINE} safely — split it`);
    if (l === MARKER) throw new AppError('invalid_request', `line ${i + 1} is the end marker ${MARKER}; rename it`);
    if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(l)) {
      throw new AppError(
        'invalid_request',
        `line ${i + 1} holds a control character (tab, escape, …) the console would interpret; replace it`,
      );
    }
  }
  const expected = createHash('sha256').update(content).digest('hex');
  let seen = '';
  const unobserve = t.observe((c) => {
    seen += c.toString('latin1');
    if (seen.length > 64 * 1024) seen = seen.slice(-32 * 1024);
  });
  const send = (s: string) => {
    if (!t.write(s)) throw new AppError('unavailable', 'the console is not connected; reconnect it and type again');
  };
  const waitFor = async (test: () => boolean, ms: number): Promise<boolean> => {
    const until = Date.now() + ms;
    while (!test()) {
      if (o.signal?.aborted) throw new AppError('cancelled', 'typing was cancelled; the remote file is incomplete');
      if (Date.now() > until) return false;
      await sleep(5);
    }
    return true;
  };
  try {
    const sendLine = async (line: string) => {
      seen = '';
      send(line + '\r');
      const tail = line.slice(-24);
      await waitFor(() => seen.includes(tail) && /[\r\n]/.test(seen.slice(seen.lastIndexOf(tail) + tail.length)), o.echoTimeoutMs ?? 2000);
      if (o.lineDelayMs) await sleep(o.lineDelayMs);
    };
    await sendLine(`cat > ${path} <<'${MARKER}'`);
    for (const [i, l] of lines.entries()) {
      await sendLine(l);
      o.progress?.(i + 1, lines.length);
    }
    await sendLine(MARKER);
    seen = '';
    send(`sha256sum ${path} | sed 's/^/POVDESK_SUM:/'\r`);
    let actual: string | null = null;
    await waitFor(() => {
      const m = /POVDESK_SUM:([0-9a-f]{64})/.exec(seen);
      if (m) actual = m[1]!;
      return actual !== null;
    }, o.resultTimeoutMs ?? 10_000);
    return { match: actual === expected, expected, actual, lines: lines.length, bytes: Buffer.byteLength(content), path };
  } finally {
    unobserve();
  }
}
