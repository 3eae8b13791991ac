import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { FileTailBackend, UnixSocketBackend } from '../../main/services/ssh/console-backends';
import { typeInto } from '../../main/services/ssh/type-into';
import { needs } from '../support/system';
import { Consumer, makeEnv, run, waitFor, waitState, type Env } from './harness';

const skip = needs(['script', 'sh', 'sha256sum', 'stty']);

/**
 * Stands in for QEMU's `-serial unix:<path>,server`: a unix socket whose other end is a real `sh`
 * on a pseudo-terminal (util-linux `script` allocates the pty), so the line discipline, echo and
 * heredoc handling are the real ones a guest's getty shell would have.
 */
function serialShell(path: string, noise?: (b: Buffer) => Buffer): { server: Server; kids: ChildProcess[] } {
  const kids: ChildProcess[] = [];
  const server = createServer((sock) => {
    const kid = spawn('script', ['-qfec', 'exec sh', '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PS1: '$ ', ENV: '' },
    });
    kids.push(kid);
    if (noise) sock.on('data', (b: Buffer) => kid.stdin!.write(noise(b)));
    else sock.pipe(kid.stdin!);
    kid.stdout!.pipe(sock);
    kid.stderr!.pipe(sock);
    kid.on('exit', () => sock.destroy());
    sock.on('close', () => kid.kill());
  });
  server.listen(path);
  return { server, kids };
}

describe.skipIf(skip)('local serial console terminals', () => {
  let dir: string;
  let env: Env;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-serial-'));
    env = makeEnv();
  });
  afterAll(() => {
    env?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('interactive console over a unix socket: input, output, and "type into console" with sha256 match', async () => {
    const sockPath = join(dir, 'serial0.sock');
    const { server, kids } = serialShell(sockPath);
    try {
      const id = env.manager.attach(new UnixSocketBackend(sockPath, 'vm1 serial'), { cols: 80, rows: 24 }, { autoReconnect: false });
      const c = new Consumer(env.hub, id);
      await waitState(env, id, 'open');
      await run(env, c, 'echo serial-$((3*4))', /serial-12/);
      const script = Array.from({ length: 60 }, (_, i) => `echo "step ${i}: $((i*2))" '$HOME' "quote's"`).join('\n') + '\n';
      const target = join(dir, 'typed.sh');
      const r = await env.manager.typeInto(id, script, { path: target });
      expect(r).toMatchObject({ match: true, lines: 60 });
      expect(r.actual).toBe(r.expected);
      expect(readFileSync(target, 'utf8')).toBe(script);
    } finally {
      for (const k of kids) k.kill();
      server.close();
    }
  });

  it('reports a mismatch when the line corrupts what arrives (a noisy serial line turning Q into q)', async () => {
    const sockPath = join(dir, 'serial1.sock');
    const { server, kids } = serialShell(sockPath, (b) => Buffer.from(b.toString('latin1').replace(/Q/g, 'q'), 'latin1'));
    try {
      const id = env.manager.attach(new UnixSocketBackend(sockPath, 'vm2 serial'), { cols: 80, rows: 24 }, { autoReconnect: false });
      const c = new Consumer(env.hub, id);
      await waitState(env, id, 'open');
      // The shell answers before typing starts, instead of a fixed pause.
      await run(env, c, 'echo ready-$((2+3))', /ready-5/);
      // The target path is typed through the same noisy line, so it must hold no Q: a mkdtemp name
      // (6 random letters and digits) did about one run in ten, the path arrived with a q, the file
      // could not be created and no sum ever came (a CI failure, first read as a slow machine).
      const target = join(tmpdir(), `povdesk-noisy-${process.pid}-${Date.now()}.sh`);
      onTestFinished(() => rmSync(target, { force: true }));
      const r = await env.manager.typeInto(id, 'echo fine\n# a Quiet Question\n', { path: target, echoTimeoutMs: 300 });
      // If the sum never came, the message shows what the console did show.
      expect(r.actual ?? '', `no sha256sum line; the console's last output:\n${c.text.slice(-2000)}`).toMatch(/^[0-9a-f]{64}$/);
      expect(r.match).toBe(false);
      expect(r.actual).not.toBe(r.expected);
    } finally {
      for (const k of kids) k.kill();
      server.close();
    }
  });

  it('a dropped serial socket is reported as dropped and reconnected when the VM comes back', async () => {
    const sockPath = join(dir, 'serial2.sock');
    let shell = serialShell(sockPath);
    const e = makeEnv({ session: { backoffMs: () => 200, maxAttempts: 20 } });
    try {
      const id = e.manager.attach(new UnixSocketBackend(sockPath, 'vm3 serial'), { cols: 80, rows: 24 });
      const c = new Consumer(e.hub, id);
      await waitState(e, id, 'open');
      for (const k of shell.kids) k.kill();
      shell.server.close();
      await waitFor('dropped', () => e.statuses.items.find((s) => s.sessionId === id && s.closedBy === 'dropped'));
      rmSync(sockPath, { force: true });
      shell = serialShell(sockPath);
      await waitFor('reopened', () => e.statuses.items.find((s) => s.sessionId === id && s.state === 'open' && s.attempt > 0));
      await run(e, c, 'echo back-$((5+5))', /back-10/);
    } finally {
      e.dispose();
      for (const k of shell.kids) k.kill();
      shell.server.close();
    }
  });

  it('read-only log tail: shows the recent end, follows appends, refuses input', async () => {
    const log = join(dir, 'console.log');
    writeFileSync(log, 'x'.repeat(100_000) + '\nboot: early line\n');
    const id = env.manager.attach(new FileTailBackend(log, 'vm1 console log', 1024, 50), { cols: 80, rows: 24 });
    const c = new Consumer(env.hub, id);
    await waitState(env, id, 'open');
    await waitFor('the tail', () => c.text.includes('boot: early line'));
    expect(c.bytes).toBeLessThanOrEqual(1024);
    appendFileSync(log, 'login: \n');
    await waitFor('the appended line', () => c.text.includes('login:'));
    expect(() => env.manager.input(id, 'root\n')).toThrow(/read-only/);
    await expect(async () => env.manager.typeInto(id, 'echo hi\n', {})).rejects.toThrow(/read-only/);
  });

  it('type-into refuses input that would not arrive intact or would run as a command', async () => {
    const sent: string[] = [];
    const t = { write: (d: string) => (sent.push(d), true), observe: () => () => undefined };
    await expect(typeInto(t, 'ok\n', { path: '/tmp/x; rm -rf /' })).rejects.toThrow(/must be absolute/);
    await expect(typeInto(t, 'a\tb\n')).rejects.toThrow(/control character/);
    await expect(typeInto(t, 'x'.repeat(1001))).rejects.toThrow(/1001 characters/);
    await expect(typeInto(t, 'POVDESK_TYPED_EOF\n')).rejects.toThrow(/end marker/);
    expect(sent).toEqual([]);
  });
});
