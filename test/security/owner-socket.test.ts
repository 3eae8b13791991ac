/**
 * Issue 33 item 4: the owner's socket and tokens. A home too deep for a socket path put the socket
 * at a predictable /tmp/povdesk-<hash>.sock; another local user who created it first received the
 * owner token from `povdesk call`, and that token was also the MCP HTTP bearer. Now: a 0700
 * runtime directory of this user's, the socket's owner and directory checked before the token is
 * sent, and MCP's own token. The other user is real: a process run as `nobody` with setpriv.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../main/core/create';
import { ownerEndpoint, ownerFiles, readOwnerInfo, tryAcquireOwnerLock, type OwnerLock } from '../../main/core/owner';
import { connectOwner } from '../../main/cli/owner-client';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { hasCommand } from '../support/system';
import { tempDir } from '../support/temp-dirs';
import { until } from '../vm-manager/support';

const secrets = () => new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null });
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0 && hasCommand('setpriv');

let core: Core | null = null;
let lock: OwnerLock | null = null;
const attackers: ChildProcess[] = [];
const env0 = process.env.XDG_RUNTIME_DIR;
afterEach(async () => {
  await core?.close();
  core = null;
  lock?.release();
  lock = null;
  for (const a of attackers.splice(0)) a.kill('SIGKILL');
  if (env0 === undefined) delete process.env.XDG_RUNTIME_DIR;
  else process.env.XDG_RUNTIME_DIR = env0;
});

/** A data directory whose `owner.sock` would exceed the socket path limit. */
function deepHome(): string {
  const home = join(tempDir('deep-home-'), 'a'.repeat(60), 'b'.repeat(40));
  expect(Buffer.byteLength(join(home, 'owner.sock'))).toBeGreaterThan(100);
  return home;
}

/**
 * Another local user (nobody) listening at `path` first (making its directory when it is missing),
 * keeping whatever a client sends. Resolves once it listens.
 */
async function squat(path: string): Promise<{ got: () => string }> {
  const script = `
    const fs = require('node:fs'), net = require('node:net'), path = require('node:path');
    fs.mkdirSync(path.dirname(${JSON.stringify(path)}), { recursive: true, mode: 0o777 });
    net.createServer((s) => s.on('data', (d) => process.stdout.write(d))).listen(${JSON.stringify(path)}, () => {
      fs.chmodSync(${JSON.stringify(path)}, 0o777);
      process.stderr.write('listening\\n');
    });`;
  const p = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  attackers.push(p);
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  await until(`the other user listening at ${path} (${err})`, () => err.includes('listening') || p.exitCode !== null, 10_000, 20);
  expect(p.exitCode, err).toBeNull();
  return { got: () => out };
}

describe('the owner socket: private directory, owner checked before the token goes', () => {
  it("a deep home gets its socket in a 0700 directory of this user's, not a predictable /tmp name", async () => {
    const home = deepHome();
    core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test', secrets: secrets() });
    const sock = ownerFiles(home).endpoint;
    const dir = lstatSync(join(sock, '..'));
    expect(lstatSync(sock).isSocket()).toBe(true);
    expect(dir.isDirectory()).toBe(true);
    expect(dir.uid).toBe(process.getuid!());
    expect(dir.mode & 0o777).toBe(0o700);
    expect((await connectOwner(home))?.pid).toBe(process.pid);
  });

  it.skipIf(!asRoot)("another user who creates the deep home's socket (and its directory) first receives no token", async () => {
    const home = deepHome();
    // where the socket's directory does not exist yet, so the other user can make it first
    process.env.XDG_RUNTIME_DIR = join(tempDir('xdg-'), 'run');
    chmodSync(join(process.env.XDG_RUNTIME_DIR, '..'), 0o777);
    const path = ownerEndpoint(home);
    const attacker = await squat(path);
    // the owner exists (its token is written) but could not listen where the other user sits
    lock = tryAcquireOwnerLock(home, 'test');
    const token = readFileSync(ownerFiles(home).token, 'utf8').trim();
    const reached = await connectOwner(home, 1000).then(
      (c) => (c ? 'connected' : 'null'),
      (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(attacker.got()).not.toContain(token);
    expect(reached).toMatch(/^forbidden: not sending the owner token .*belongs to another user/);
  });

  it.skipIf(!asRoot)("an owner.sock of another user's in a data directory others may write: no token", async () => {
    const home = tempDir('loose-home-');
    lock = tryAcquireOwnerLock(home, 'test');
    chmodSync(home, 0o777); // a misconfigured (or shared) data directory
    const attacker = await squat(join(home, 'owner.sock'));
    const token = readFileSync(ownerFiles(home).token, 'utf8').trim();
    await expect(connectOwner(home, 1000)).rejects.toMatchObject({ code: 'forbidden' });
    await new Promise((r) => setTimeout(r, 200));
    expect(attacker.got()).not.toContain(token);
  });

  it("MCP over HTTP has its own bearer token (mcp.token, 0600): the socket's owner.token is refused", async () => {
    const home = tempDir('mcp-token-');
    core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'app', secrets: secrets() });
    const url = readOwnerInfo(home)?.mcpUrl;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const files = ownerFiles(home);
    expect(lstatSync(files.mcpToken).mode & 0o777).toBe(0o600);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const post = (token: string) =>
      fetch(url!, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` },
        body: JSON.stringify(init),
      });
    const ownerToken = readFileSync(files.token, 'utf8').trim();
    const mcpToken = readFileSync(files.mcpToken, 'utf8').trim();
    expect(mcpToken).not.toBe(ownerToken);
    expect((await post(ownerToken)).status).toBe(401);
    expect((await post(mcpToken)).status).toBe(200);
  });

  it('Windows: the pipe name comes from the owner token, so no other user knows it before it exists (logic only: no Windows here)', () => {
    const home = tempDir('win-home-');
    const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
    /** ownerEndpoint as it runs on Windows (only the name's computation is stubbed; nothing else runs as win32) */
    const pipe = () => {
      Object.defineProperty(process, 'platform', { value: 'win32' });
      try {
        return ownerEndpoint(home);
      } finally {
        Object.defineProperty(process, 'platform', platform);
      }
    };
    lock = tryAcquireOwnerLock(home, 'test');
    const first = pipe();
    expect(first).toMatch(/^\\\\\.\\pipe\\povdesk-[0-9a-f]{32}$/);
    expect(pipe()).toBe(first); // the client computes what the server listens on
    lock!.release();
    lock = tryAcquireOwnerLock(home, 'test'); // the next owner: a new token, a new name
    expect(pipe()).not.toBe(first);
    // nothing derived from the home alone (what another user could compute)
    expect(first).not.toContain(createHash('sha256').update(home).digest('hex').slice(0, 16));
  });
});
