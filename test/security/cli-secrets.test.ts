/**
 * Issue 33 item 3: secrets stay off command lines, which every local user can read
 * (/proc/<pid>/cmdline). `povdesk call <method> -` reads the JSON from standard input and
 * `@path` from a file; a secret-bearing method given its JSON on the command line works but warns;
 * `vm-manager serve` / `image golden` take the token from POVDESK_VMM_TOKEN or a 0600
 * --token-file. --help and the MCP refusals say so.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodHints } from '../../shared/contract/annotations';
import { helpText } from '../../main/cli/index';
import { runVmManagerCli } from '../../main/vm-manager/cli';
import { tempHome } from '../foundation/helpers';
import { tempDir } from '../support/temp-dirs';
import { until } from '../vm-manager/support';

const BIN = join(__dirname, '..', '..', 'bin', 'povdesk.mjs');
const TOKEN = 'skytap-token-on-stdin-4d2f9a';
const save = { username: 'someone', url: 'https://skytap.example.com', apiToken: TOKEN };

/** The command lines of `pid` and its descendants, as /proc shows them to every local user. */
function cmdlines(pid: number): string[] {
  const lines: string[] = [];
  const walk = (p: number) => {
    try {
      lines.push(readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0').join(' '));
      for (const c of readFileSync(`/proc/${p}/task/${p}/children`, 'latin1').trim().split(/\s+/).filter(Boolean)) walk(Number(c));
    } catch {
      // gone
    }
  };
  walk(pid);
  return lines;
}

/** Runs the CLI; `feed` is called once it runs, with a writer for its stdin and its pid. */
function cli(args: string[], feed?: (write: (s: string) => void, pid: number) => Promise<void>) {
  return new Promise<{ code: number | null; out: string; err: string; seen: string[] }>((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, POVDESK_FROM_SOURCE: '1', POVDESK_HOME: tempHome() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const seen: string[] = [];
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out, err, seen }));
    if (feed) {
      void feed((s) => p.stdin.end(s), p.pid!).catch(reject);
    } else p.stdin.end();
    // what every local user sees while it runs
    const look = setInterval(() => seen.push(...cmdlines(p.pid!)), 20);
    p.on('close', () => clearInterval(look));
  });
}

describe('secrets off the command line', () => {
  it('call <method> - reads the JSON from standard input: the token never shows in /proc, no warning', async () => {
    const r = await cli(['call', 'settings.saveSkytap', '-'], async (write, pid) => {
      // it waits for standard input: look at its command line (and its children's) meanwhile
      await until('the CLI running', () => cmdlines(pid).some((l) => l.includes('settings.saveSkytap')), 30_000, 20);
      write(JSON.stringify(save));
    });
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out).skytap).toMatchObject({ username: 'someone', tokenSet: true });
    expect(r.seen.length).toBeGreaterThan(0);
    expect(r.seen.filter((l) => l.includes(TOKEN))).toEqual([]);
    expect(r.err).not.toMatch(/warning/);
  }, 60_000);

  it('call <method> @file reads the JSON from the file', async () => {
    const file = join(tempDir('cli-args-'), 'skytap.json');
    writeFileSync(file, JSON.stringify(save), { mode: 0o600 });
    const r = await cli(['call', 'settings.saveSkytap', `@${file}`]);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out).skytap).toMatchObject({ tokenSet: true });
    expect(r.seen.filter((l) => l.includes(TOKEN))).toEqual([]);
    const missing = await cli(['call', 'settings.saveSkytap', '@/nonexistent/args.json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.err.trim()).error).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('cannot read the arguments file'),
    });
  }, 60_000);

  it('a secret-bearing method with its JSON on the command line still works, with a warning naming - and @', async () => {
    const r = await cli(['call', 'settings.saveSkytap', JSON.stringify(save)]);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(
      /warning: settings\.saveSkytap takes the Skytap API token, and this command line is readable by every local user.*standard input \(`-`\).*\(`@path`\)/,
    );
    const plain = await cli(['call', 'settings.get', '{}']);
    expect(plain.err).not.toMatch(/warning/);
  }, 60_000);

  it('--help and the MCP refusal texts say how to pass secrets', () => {
    expect(helpText()).toMatch(/povdesk call <method> - \[--wait\]/);
    expect(helpText()).toMatch(/POVDESK_VMM_TOKEN/);
    for (const m of [
      'settings.saveSkytap',
      'pam.saveTenants',
      'controlNode.saveSettings',
      'vm.setConnection',
      'ssh.profiles.save',
    ] as const) {
      const h = methodHints[m] as { takesSecret?: string; notOverMcp?: string };
      expect(h.takesSecret, m).toBeTruthy();
      expect(h.notOverMcp, m).toMatch(/standard input \(`-`\) or in a file \(`@path`\), never on its command line/);
    }
  });
});

describe('vm-manager tokens: POVDESK_VMM_TOKEN or a 0600 --token-file', () => {
  let server: Server;
  let url = '';
  const seen: string[] = [];
  const dir = tempDir('vmm-token-');
  const state = join(dir, 'state');
  beforeAll(async () => {
    // image golden asks a server for a VM's attestation with the token: this one records it
    server = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"no such VM"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const img = join(state, 'images', 'img');
    mkdirSync(img, { recursive: true });
    writeFileSync(join(img, 'image.json'), JSON.stringify({ name: 'img', kind: 'disk', createdAt: '', sizeBytes: 0, sha256: '' }));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const golden = async (extra: string[], env: NodeJS.ProcessEnv = {}) => {
    const lines: string[] = [];
    const code = await runVmManagerCli(
      ['image', 'golden', 'img', '--from-vm', 'abcd1234', '--state-dir', state, '--server', url, ...extra],
      (s) => lines.push(s),
      (s) => lines.push(s),
      env,
    );
    return { code, text: lines.join('\n') };
  };

  it('takes the token from a 0600 file, or from POVDESK_VMM_TOKEN, without a warning', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'file-token-1\n', { mode: 0o600 });
    chmodSync(file, 0o600);
    const a = await golden(['--token-file', file]);
    const b = await golden([], { POVDESK_VMM_TOKEN: 'env-token-2' });
    expect(seen.slice(-2)).toEqual(['Bearer file-token-1', 'Bearer env-token-2']);
    expect(a.text + b.text).not.toMatch(/warning/);
  });

  it('refuses a token file others may read, naming chmod 600', async () => {
    const file = join(dir, 'loose');
    writeFileSync(file, 'loose-token');
    chmodSync(file, 0o644);
    const before = seen.length;
    const r = await golden(['--token-file', file]);
    expect(r.code).toBe(2);
    expect(r.text).toMatch(/may be read by other users \(mode 644\): chmod 600/);
    expect(seen.length).toBe(before);
  });

  it('--token on the command line still works, with a warning', async () => {
    const r = await golden(['--token', 'argv-token-3']);
    expect(seen.at(-1)).toBe('Bearer argv-token-3');
    expect(r.text).toMatch(/warning: --token puts the token on the command line.*POVDESK_VMM_TOKEN or --token-file/);
  });
});
