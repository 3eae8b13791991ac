import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BEGIN_LINE, END_LINE } from '../../main/services/control-node/markers';
import { buildRunner, buildUnit, MAX_LINE, runnerScript, sha256Hex } from '../../main/services/control-node/runner';
import { needs } from '../support/system';

const missing = needs(['dash', 'busybox', 'curl', 'sha256sum']);

/** A loopback stand-in for Skytap's metadata service. */
class Metadata {
  userData = '';
  mode: 'path' | 'json' = 'path';
  hits = 0;
  server: Server = createServer((req, res) => {
    this.hits++;
    if (this.mode === 'path' && req.url === '/skytap/vms/self/user_data') {
      res.end(this.userData);
    } else if (this.mode === 'json' && req.url === '/skytap') {
      // Rails-style JSON: "<", ">", "&" escaped as \u00XX, "/" escaped as "\/".
      const json = JSON.stringify({ id: '123', name: 'BtPocLin01', user_data: this.userData, runstate: 'running' })
        .replace(/</g, '\\u003c')
        .replace(/>/g, '\\u003e')
        .replace(/&/g, '\\u0026')
        .replace(/\//g, '\\/');
      res.setHeader('content-type', 'application/json');
      res.end(json);
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  url = '';
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    if (!a || typeof a === 'string') throw new Error('no address');
    this.url = `http://127.0.0.1:${a.port}`;
  }
  stop() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(pred: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(50);
  }
  return pred();
}

/** A payload that records each run and a copy of itself. */
function payload(dir: string, tag: string): string {
  return [
    '#!/bin/sh',
    BEGIN_LINE,
    `# tag ${tag} <a&b> "q" \\ back/slash`,
    `echo ${tag} >> '${dir}/ran.log'`,
    `cp "$0" '${dir}/copy-${tag}.sh'`,
    END_LINE,
  ].join('\n');
}

describe.skipIf(missing)('template runner against a loopback metadata service', () => {
  let md: Metadata;
  let dir: string;
  let proc: ChildProcess | null = null;
  let stderr = '';
  const ranLog = () => (existsSync(join(dir, 'ran.log')) ? readFileSync(join(dir, 'ran.log'), 'utf8').trim().split('\n') : []);

  function startRunner(shell: string[], env: NodeJS.ProcessEnv = process.env) {
    const file = join(dir, 'runner.sh');
    writeFileSync(
      file,
      buildRunner({ metadataUrl: md.url, intervalSeconds: 1, stateDir: join(dir, 'state'), runFile: join(dir, 'run/payload.sh') }),
    );
    // its own process group, so a stop ends what it started too (as systemd stops the unit's cgroup)
    proc = spawn(shell[0]!, [...shell.slice(1), file], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    proc.stderr!.on('data', (d) => (stderr += String(d)));
  }
  async function stopRunner() {
    if (!proc) return;
    const p = proc;
    proc = null;
    const gone = new Promise((r) => p.once('exit', r));
    // The whole group: a SIGTERM to the shell alone left its children (a fetch, a sleep) writing into
    // the directory the test then removed (ENOTEMPTY once in a loaded run).
    try {
      process.kill(-p.pid!, 'SIGTERM');
    } catch {
      p.kill('SIGTERM');
    }
    await gone;
  }

  beforeAll(async () => {
    md = new Metadata();
    await md.start();
  });
  afterAll(async () => {
    await stopRunner();
    await md.stop();
  });

  it('under dash: waits while empty, ignores one marker, runs once, not again after a restart, again on change', async () => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-runner-'));
    md.mode = 'path';
    md.userData = '';
    startRunner(['dash']);
    expect(await until(() => md.hits >= 3, 5000)).toBe(true); // polling while empty
    expect(ranLog()).toEqual([]);

    md.userData = payload(dir, 'half').replace(END_LINE, ''); // truncated: BEGIN only
    const h = md.hits;
    await until(() => md.hits >= h + 2, 4000);
    expect(ranLog()).toEqual([]);
    expect(stderr).toContain('one marker only');

    md.userData = payload(dir, 'one');
    expect(await until(() => ranLog().length === 1, 4000)).toBe(true);
    const h2 = md.hits;
    await until(() => md.hits >= h2 + 3, 5000);
    expect(ranLog()).toEqual(['one']);
    expect(readFileSync(join(dir, 'copy-one.sh'), 'utf8')).toBe(`${md.userData}\n`);
    expect(readFileSync(join(dir, 'state/last'), 'utf8').trim()).toBe(sha256Hex(md.userData));
    expect(existsSync(join(dir, 'run/payload.sh'))).toBe(false); // the payload (with its code) is removed

    await stopRunner(); // a reboot with the same user_data
    startRunner(['dash']);
    const h3 = md.hits;
    await until(() => md.hits >= h3 + 3, 5000);
    expect(ranLog()).toEqual(['one']);

    md.userData = payload(dir, 'two'); // a re-injection: a new code
    expect(await until(() => ranLog().length === 2, 4000)).toBe(true);
    expect(ranLog()).toEqual(['one', 'two']);
    await stopRunner();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }, 40_000);

  it('under dash: a failing payload is not marked as run and is retried on the next poll', async () => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-runner-'));
    md.mode = 'path';
    // Fails the first time (leaving a flag), succeeds the second.
    md.userData = [
      '#!/bin/sh',
      BEGIN_LINE,
      `echo try >> '${dir}/ran.log'`,
      `[ -e '${dir}/flag' ] || { touch '${dir}/flag'; exit 3; }`,
      END_LINE,
    ].join('\n');
    startRunner(['dash']);
    expect(await until(() => ranLog().length === 2, 5000)).toBe(true);
    expect(await until(() => existsSync(join(dir, 'state/last')), 2000)).toBe(true);
    expect(stderr).toMatch(/payload [0-9a-f]{64} failed; retry in 1 s/);
    const h = md.hits;
    await until(() => md.hits >= h + 2, 4000);
    expect(ranLog()).toEqual(['try', 'try']);
    await stopRunner();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }, 30_000);

  it('on a BusyBox-only guest (no curl: wget, busybox awk): falls back to the /skytap JSON document', async () => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-runner-'));
    const bb = join(dir, 'bb');
    mkdirSync(bb);
    for (const applet of spawnSync('busybox', ['--list'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)) {
      symlinkSync('/usr/bin/busybox', join(bb, applet));
    }
    md.mode = 'json';
    md.userData = payload(dir, 'json');
    startRunner(['busybox', 'sh'], { PATH: bb });
    expect(await until(() => ranLog().length === 1, 6000)).toBe(true);
    expect(readFileSync(join(dir, 'copy-json.sh'), 'utf8')).toBe(`${md.userData}\n`);
    await stopRunner();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }, 30_000);
});

describe('runner script text', () => {
  const r = runnerScript();
  it('is plain 7-bit ASCII with short lines, ships 169.254.169.254 and a 20 s poll', () => {
    expect(r.script).toMatch(/^[\x20-\x7e\n]*$/);
    for (const l of r.lines) expect(l.text.length, `line ${l.n}`).toBeLessThanOrEqual(MAX_LINE);
    expect(r.script).toContain("BASE='http://169.254.169.254'");
    expect(r.script).toContain('EVERY=20');
    expect(r.script).toContain("BEGIN='BEGIN-DASHBOARD-AGENT-BOOTSTRAP'");
    expect(r.script).toContain("END='END-DASHBOARD-AGENT-BOOTSTRAP'");
  });
  it('gives a sha256 that sha256sum agrees with, and a 4-hex checksum per line matching the guest command', () => {
    const dir = mkdtempSync(join(tmpdir(), 'povdesk-runner-'));
    try {
      const file = join(dir, 'runner');
      writeFileSync(file, r.script);
      expect(spawnSync('sha256sum', [file], { encoding: 'utf8' }).stdout.split(' ')[0]).toBe(r.sha256);
      const out = spawnSync('sh', ['-c', r.checks.perLine.replaceAll('/usr/local/sbin/dashboard-bootstrap-runner', file)], {
        encoding: 'utf8',
      }).stdout;
      expect(out.trim().split('\n')).toEqual(r.lines.map((l) => `${l.n} ${l.sum}`));
      expect(r.lines.map((l) => l.text).join('\n') + '\n').toBe(r.script);
    } finally {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    }
  });
  it('ships a systemd unit with Restart=always that runs the script as root', () => {
    expect(r.unit).toContain('Restart=always');
    expect(r.unit).toContain('User=root');
    expect(r.unit).toContain('ExecStart=/usr/local/sbin/dashboard-bootstrap-runner');
    expect(buildUnit()).toBe(r.unit);
  });
  it('the files in resources/template-runner/ are the generated ones (regenerate with scripts in docs/control-node.md)', () => {
    const res = join(__dirname, '../../resources/template-runner');
    expect(readFileSync(join(res, 'dashboard-bootstrap-runner'), 'utf8')).toBe(r.script);
    expect(readFileSync(join(res, 'dashboard-bootstrap-runner.service'), 'utf8')).toBe(r.unit);
  });
  it('refuses to run when not root', () => {
    if (process.getuid?.() !== 0) return;
    const res = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'sh', '-c', buildRunner()], { encoding: 'utf8' });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('must run as root');
  });
});
