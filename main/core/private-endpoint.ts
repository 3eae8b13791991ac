import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { AppError } from '../../shared/contract';

/**
 * Where the owner's Unix socket may live, and the checks a client makes before it sends the owner
 * token there. A socket in a directory another local user can write could be theirs: created
 * first, it would receive the token of whoever connects (docs/security.md, 33.4).
 */

/**
 * This user's private runtime directory: $XDG_RUNTIME_DIR (systemd makes it 0700 per user), else
 * `<tmp>/povdesk-<uid>`, made 0700 by the first owner and checked by every use.
 */
export function runtimeDir(env: NodeJS.ProcessEnv = process.env): string {
  const x = env.XDG_RUNTIME_DIR;
  if (x && isAbsolute(x)) return x;
  return join(tmpdir(), `povdesk-${process.getuid?.() ?? 'user'}`);
}

const uid = () => process.getuid?.() ?? -1;

/**
 * Why `dir` could hold another user's files (null when it cannot): it must be a real directory
 * (no link), owned by this user, and writable by nobody else. `strict` also refuses read/search
 * access for others (the runtime directory must be 0700; a data directory may be 0755).
 */
export function dirProblem(dir: string, strict: boolean): string | null {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return `${dir} does not exist`;
  if (!st.isDirectory()) return `${dir} is not a directory (a link?)`;
  if (st.uid !== uid()) return `${dir} belongs to another user (uid ${st.uid})`;
  const others = st.mode & (strict ? 0o077 : 0o022);
  if (others) return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)})`;
  return null;
}

/** `<home>/owner.sock` sits in the data directory (0755 will do); any other socket in the runtime directory (0700). */
const inRuntimeDir = (path: string) => basename(path) !== 'owner.sock';

/** The server side: makes the socket's directory when it is the runtime directory (0700), then checks it. */
export function ensureEndpointDir(path: string): void {
  if (process.platform === 'win32') return;
  const dir = dirname(path);
  const strict = inRuntimeDir(path);
  if (strict) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const problem = dirProblem(dir, strict);
  if (problem)
    throw new AppError(
      'forbidden',
      `the owner's socket cannot go in ${dir}: ${problem}; remove it or set XDG_RUNTIME_DIR to a directory only you can use`,
    );
}

/**
 * The client side, before the token is sent: null when `path` is absent (nobody listens) or is a
 * socket of this user's in a directory only this user writes; else why the token must not go there.
 */
export function endpointProblem(path: string): string | null {
  if (process.platform === 'win32') return null; // the pipe's name is secret (ownerEndpoint)
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return null;
  const dir = dirname(path);
  const problem = dirProblem(dir, inRuntimeDir(path));
  if (problem) return problem;
  if (!st.isSocket()) return `${path} is not a socket`;
  if (st.uid !== uid()) return `${path} belongs to another user (uid ${st.uid})`;
  return null;
}
