/**
 * Stoplight Prism (an OpenAPI mock and validating proxy we did not write) on a third party's own
 * document: `mock` answers from the document and refuses a request that does not validate (422);
 * `proxy` forwards to a real server and checks the request and the answer both ways. Started with
 * `--errors`, so a violation is an error answer, and every violation Prism logs is kept for the
 * test to assert on (`violations()`).
 *
 * The documents are not vendored: the research folder beside the clone holds them, named by an
 * environment variable (.ci/run sets each to ../shared/research/...); under CI=true a missing
 * document is a failure (specFolder), elsewhere the suite skips with the reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { tempDir } from './temp-dirs';

export interface SpecFolder {
  dir: string;
  /** why the document cannot be read, or null */
  missing: string | null;
}

/** The folder an environment variable names, and whether `file` is in it. */
export function specFolder(env: string, file: string, example: string): SpecFolder {
  const dir = process.env[env] ?? '';
  const missing = !dir
    ? `${env} is not set (it names the folder holding ${file}, e.g. ${example})`
    : !existsSync(join(dir, file))
      ? `${env}=${dir} holds no ${file}`
      : null;
  return { dir, missing };
}

/** Whether a suite needing these folders runs: null, or the reason it skips (a failure under CI=true, see the suites). */
export const skipUnlessCi = (...f: SpecFolder[]): string | null => {
  const m = f
    .map((x) => x.missing)
    .filter(Boolean)
    .join('; ');
  return m && process.env.CI !== 'true' ? m : null;
};

type Doc = { servers?: { url: string }[]; paths: Record<string, unknown> } & Record<string, unknown>;

/**
 * A document as Prism is given it: parsed, and its paths prefixed with the path of its first
 * server URL (the API's base, "/api/v1" or "https://site/api/config/v1"), which Prism does not
 * apply when routing.
 */
export function forPrism(doc: Doc): Doc {
  const base = doc.servers?.[0]?.url ? new URL(doc.servers[0].url, 'http://x').pathname.replace(/\/+$/, '') : '';
  const paths = Object.fromEntries(Object.entries(doc.paths).map(([p, v]) => [`${base}${p}`, v]));
  return { ...doc, servers: [{ url: '/' }], paths };
}

/**
 * giantswarm/vm-manager's api/openapi.yaml (../shared/research/giantswarm): its README says one
 * plain scalar holds ": ", which a strict YAML parser refuses; that value is quoted in memory.
 */
export function giantswarmDocument(dir: string): Doc {
  const raw = readFileSync(join(dir, 'openapi.yaml'), 'utf8');
  const bad = 'description: Served as /kubernetes-version; default: the newest the image offers.';
  const fixed = raw.replace(bad, `description: ${JSON.stringify(bad.slice('description: '.length))}`);
  return parse(fixed) as Doc;
}

export function praDocument(dir: string): Doc {
  return parse(readFileSync(join(dir, 'pra-configuration-api.openapi.yaml'), 'utf8')) as Doc;
}

export function entitleDocument(dir: string): Doc {
  return JSON.parse(readFileSync(join(dir, 'entitle-api-v3.openapi.json'), 'utf8')) as Doc;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface Prism {
  url: string;
  /** everything Prism printed */
  log(): string;
  /** the violations Prism logged (request or response), one line each, once its log has been quiet for 200 ms */
  violations(): Promise<string[]>;
  close(): Promise<void>;
}

const PRISM = join(process.cwd(), 'node_modules/@stoplight/prism-cli/dist/index.js');

/**
 * Prism `mock` on a document, or `proxy` in front of `upstream`, on a free loopback port. With
 * `errors: false` a proxy forwards a request that does not validate (and logs the violation), for
 * suites that send invalid requests on purpose to see the server refuse them.
 */
export async function startPrism(mode: 'mock' | 'proxy', doc: Doc, upstream?: string, o: { errors?: boolean } = {}): Promise<Prism> {
  const file = join(tempDir('povdesk-prism-'), 'openapi.json');
  writeFileSync(file, JSON.stringify(forPrism(doc)));
  const port = await freePort();
  const args = [
    PRISM,
    mode,
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    ...(o.errors === false ? [] : ['--errors']),
    file,
    ...(upstream ? [upstream] : []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  let out = '';
  const onData = (d: Buffer) => (out += d.toString());
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`Prism did not start in 60 s:\n${out.slice(-2000)}`)), 60_000);
    const check = () => {
      if (out.includes('Prism is listening')) return (clearTimeout(t), resolve());
      if (child.exitCode !== null) return (clearTimeout(t), reject(new Error(`Prism exited ${child.exitCode}:\n${out.slice(-2000)}`)));
      setTimeout(check, 50);
    };
    check();
  });
  const plain = () => out.replace(/\u001b\[[0-9;]*m/g, '');
  return {
    url: `http://127.0.0.1:${port}`,
    log: plain,
    async violations() {
      for (let seen = -1; seen !== out.length;) {
        seen = out.length;
        await new Promise((r) => setTimeout(r, 200));
      }
      return plain()
        .split('\n')
        .filter((l) => /Violation:|✖/.test(l));
    },
    close: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null) return r();
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A loopback front that sends each request through Prism, or straight to `upstream` when
 * `direct(path)`: for an endpoint the document does not describe (PRA's /oauth2/token is in the
 * text of its spec, not in its paths).
 */
export async function front(
  prismUrl: string,
  upstream: string,
  direct: (path: string) => boolean,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttpServer((req, res) => {
    const target = new URL(req.url ?? '/', direct(new URL(req.url ?? '/', 'http://x').pathname) ? upstream : prismUrl);
    const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', (e) => res.writeHead(502).end(String(e)));
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
