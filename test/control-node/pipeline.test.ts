import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compressPayload, stripComments } from '../../main/services/control-node/fit';
import { buildBootstrap } from '../../main/services/control-node/payload';
import { buildRunner, sha256Hex } from '../../main/services/control-node/runner';
import { needs } from '../support/system';
import { baseInput } from './fixtures';
import { makeSandbox, SOCKET_GID, type Sandbox } from './sandbox';

const missing = needs(['dash', 'busybox', 'curl']);

/**
 * The whole guest side at once: the generated runner fetches a fitted bootstrap from a loopback
 * metadata service and runs it, and the fake docker sees the agent start as the payload tests
 * expect. Once on a Debian-like PATH (dash, curl, tier 2), once on a BusyBox-only PATH (wget,
 * the /skytap JSON fallback, tier 3).
 */
describe.skipIf(missing)('runner + fitted bootstrap, end to end on the guest side', () => {
  let box: Sandbox | null = null;
  let server: Server | null = null;
  let proc: ChildProcess | null = null;
  afterEach(async () => {
    if (proc) {
      const p = proc;
      proc = null;
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await gone;
    }
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((r) => server!.close(() => r()));
    }
    await box?.close();
  });

  async function serve(route: string, body: string) {
    server = createServer((req, res) => {
      if (req.url === route) res.end(body);
      else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  async function agentStarted(b: Sandbox, ms: number) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (b.calls().some((c) => c[0] === 'CODEFILE')) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  }

  function check(b: Sandbox) {
    const calls = b.calls();
    const rm = calls.findIndex((c) => c[0] === 'volume' && c.includes('dashboard-agent-state'));
    const run = calls.findIndex((c) => c[0] === 'run' && c.includes('dashboard-agent'));
    expect(rm).toBeGreaterThanOrEqual(0);
    expect(run).toBeGreaterThan(rm);
    expect(calls[run]![calls[run]!.indexOf('--group-add') + 1]).toBe(String(SOCKET_GID));
    expect(calls[run + 1]).toEqual(['CODEFILE', '644']);
    expect(statSync(join(b.root, 'etc/dashboard-agent/enrolment-code')).mode & 0o777).toBe(0o644);
  }

  it('dash + curl, tier 2 from /skytap/vms/self/user_data', async () => {
    box = await makeSandbox();
    const payload = stripComments(buildBootstrap(baseInput(box.root)).script);
    const url = await serve('/skytap/vms/self/user_data', payload);
    const runner = join(box.dir, 'runner.sh');
    writeFileSync(
      runner,
      buildRunner({ metadataUrl: url, intervalSeconds: 1, stateDir: join(box.dir, 'state'), runFile: join(box.dir, 'run/p.sh') }),
    );
    proc = spawn('dash', [runner], {
      env: {
        PATH: `${box.bin}:/usr/bin:/bin`,
        FAKE_DOCKER_LOG: box.log,
        FAKE_CODE_FILE: join(box.root, 'etc/dashboard-agent/enrolment-code'),
      },
      stdio: 'ignore',
    });
    expect(await agentStarted(box, 8000)).toBe(true);
    check(box);
  }, 20_000);

  it('BusyBox only (wget, awk JSON fallback), tier 3 from the /skytap document', async () => {
    box = await makeSandbox();
    const bb = join(box.dir, 'bb');
    mkdirSync(bb);
    for (const applet of spawnSync('busybox', ['--list'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)) {
      symlinkSync('/usr/bin/busybox', join(bb, applet));
    }
    const payload = compressPayload(buildBootstrap(baseInput(box.root)).script);
    const url = await serve('/skytap', JSON.stringify({ id: '1', user_data: payload }).replace(/\//g, '\\/'));
    const runner = join(box.dir, 'runner.sh');
    writeFileSync(
      runner,
      buildRunner({ metadataUrl: url, intervalSeconds: 1, stateDir: join(box.dir, 'state'), runFile: join(box.dir, 'run/p.sh') }),
    );
    proc = spawn('busybox', ['sh', runner], {
      env: {
        PATH: `${box.bin}:${bb}`,
        TMPDIR: box.dir,
        FAKE_DOCKER_LOG: box.log,
        FAKE_CODE_FILE: join(box.root, 'etc/dashboard-agent/enrolment-code'),
      },
      stdio: 'ignore',
    });
    expect(await agentStarted(box, 8000)).toBe(true);
    check(box);
    // The runner marks the payload once the bootstrap exits (just after the agent "starts").
    const mark = join(box.dir, 'state/last');
    for (let i = 0; i < 50 && !existsSync(mark); i++) await new Promise((r) => setTimeout(r, 100));
    expect(readFileSync(mark, 'utf8').trim()).toBe(sha256Hex(payload.replace(/\n+$/, '')));
  }, 20_000);
});
