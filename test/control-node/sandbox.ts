import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The shells every generated script must run under, as argv prefixes. */
export const SHELLS: Record<string, string[]> = {
  dash: ['dash'],
  bash: ['bash'],
  busybox: ['busybox', 'sh'],
};

/** The group id the fake docker socket is given (root can chown; otherwise our own gid). */
export const SOCKET_GID = process.getuid?.() === 0 ? 4242 : process.getgid!();

const SEP = '\x1f';

/**
 * A fake `docker` for the bootstrap: logs every argv as one line (fields separated by \x1f), and
 * at `docker run --name dashboard-agent` also records the enrolment code file's mode and whether
 * it exists, so a test sees the state at the moment the container would start. With FAKE_SVID=1
 * the spiffe-helper "run" writes an SVID into the directory mounted at /run/spiffe.
 */
const FAKE_DOCKER = `#!/bin/sh
log="$FAKE_DOCKER_LOG"
{ for a in "$@"; do printf '%s${SEP}' "$a"; done; printf '\\n'; } >> "$log"
case "$1" in
  run)
    name=""; prev=""
    for a in "$@"; do
      [ "$prev" = "--name" ] && name="$a"
      case "$prev:$a" in -v:*:/run/spiffe) svid="\${a%:/run/spiffe}" ;; esac
      prev="$a"
    done
    if [ "$name" = dashboard-agent ]; then
      if [ -e "$FAKE_CODE_FILE" ]; then printf 'CODEFILE %s\\n' "$(stat -c %a "$FAKE_CODE_FILE")" >> "$log"
      else printf 'CODEFILE absent\\n' >> "$log"; fi
    fi
    if [ "$name" = dashboard-spiffe-helper ] && [ "\${FAKE_SVID:-0}" = 1 ]; then
      printf 'eyJhbGciOi.fake.jwt\\n' > "$svid/jwt.token"
    fi
    echo 0123456789abcdef
    ;;
  logs) echo "spire-agent: level=error msg=\\"could not dial server\\" fake-log-line" ;;
esac
exit 0
`;

export interface Sandbox {
  dir: string;
  root: string;
  bin: string;
  log: string;
  /** Runs a script file under a shell with the fake docker first on PATH. */
  run(shell: string[], scriptFile: string, env?: Record<string, string>): { status: number | null; stdout: string; stderr: string };
  /** Each docker invocation as its argv (plus CODEFILE lines as ['CODEFILE', mode]). */
  calls(): string[][];
  close(): Promise<void>;
}

export async function makeSandbox(opts: { socket?: boolean } = {}): Promise<Sandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-cn-'));
  const root = join(dir, 'root');
  const bin = join(dir, 'bin');
  const log = join(dir, 'docker.log');
  mkdirSync(join(root, 'var/run'), { recursive: true });
  mkdirSync(bin);
  writeFileSync(join(bin, 'docker'), FAKE_DOCKER);
  chmodSync(join(bin, 'docker'), 0o755);
  writeFileSync(log, '');
  let server: Server | null = null;
  if (opts.socket !== false) {
    const sock = join(root, 'var/run/docker.sock');
    server = createServer();
    await new Promise<void>((resolve, reject) => server!.listen(sock, resolve).once('error', reject));
    if (process.getuid?.() === 0) chownSync(sock, 0, SOCKET_GID);
  }
  return {
    dir,
    root,
    bin,
    log,
    run(shell, scriptFile, env = {}) {
      const r = spawnSync(shell[0]!, [...shell.slice(1), scriptFile], {
        encoding: 'utf8',
        env: {
          PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`,
          FAKE_DOCKER_LOG: log,
          FAKE_CODE_FILE: join(root, 'etc/dashboard-agent/enrolment-code'),
          TMPDIR: dir,
          ...env,
        },
        timeout: 20_000,
      });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
    calls() {
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (l.startsWith('CODEFILE ') ? l.split(' ') : l.split(SEP).slice(0, -1)));
    },
    async close() {
      if (server) await new Promise<void>((r) => server!.close(() => r()));
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    },
  };
}
