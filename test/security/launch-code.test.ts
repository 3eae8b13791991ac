import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAUNCH_CODE_HEADER, LAUNCH_PATH } from '../../shared/contract/transport';
import { tempHome } from '../foundation/helpers';

const ROOT = join(__dirname, '..', '..');

// Item 5 of the security review: `serve --open` must not put the launch token on the opener's
// command line (/proc/<pid>/cmdline is readable by every local user). The opener gets a one-time
// code; the page exchanges it for the token.
describe('serve --open hands the browser a one-time code, never the token', () => {
  const bin = tempHome('povdesk-opener-');
  const argvFile = join(bin, 'argv.txt');
  let child: ChildProcess;
  let printed = '';

  beforeAll(async () => {
    // Stands in for the desktop's opener: records the command line it was given, as /proc would show it.
    for (const name of ['xdg-open', 'open']) {
      writeFileSync(join(bin, name), `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > '${argvFile}'\n`);
      chmodSync(join(bin, name), 0o755);
    }
    const home = tempHome();
    child = spawn(process.execPath, [join(ROOT, 'bin/povdesk.mjs'), 'serve', '--port', '0', '--open'], {
      env: {
        ...process.env,
        POVDESK_HOME: home,
        POVDESK_FROM_SOURCE: '1',
        PATH: `${bin}:${process.env.PATH}`,
        DBUS_SESSION_BUS_ADDRESS: 'disabled:',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`serve did not start:\n${printed}`)), 60_000);
      child.stdout!.on('data', (b: Buffer) => {
        printed += b.toString();
        if (/serving http:\/\/\S+/.test(printed)) {
          clearTimeout(t);
          resolve();
        }
      });
      child.stderr!.on('data', (b: Buffer) => (printed += b.toString()));
    });
    for (let i = 0; i < 100 && !existsSync(argvFile); i++) await new Promise((r) => setTimeout(r, 100));
  }, 90_000);
  afterAll(() => {
    child?.kill('SIGTERM');
  });

  const token = () => /#token=([A-Za-z0-9_-]+)/.exec(printed)![1]!;
  const base = () => /serving (http:\/\/[^/]+)\//.exec(printed)![1]!;
  const exchange = (code: string) =>
    fetch(base() + LAUNCH_PATH, { method: 'POST', headers: { [LAUNCH_CODE_HEADER]: code, Origin: base() } });

  it('the opener is given no token', () => {
    const argv = readFileSync(argvFile, 'utf8');
    expect(argv).toContain(base());
    expect(argv).not.toContain(token());
    expect(argv).not.toContain('token=');
  });

  it('the code it is given is exchanged once for the token', async () => {
    const code = /#code=([A-Za-z0-9_-]+)/.exec(readFileSync(argvFile, 'utf8'))?.[1];
    expect(code).toBeTruthy();
    const first = await exchange(code!);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(await first.json()).toEqual({ token: token() });
    const again = await exchange(code!);
    expect(again.status).toBe(403);
    expect(await again.text()).toMatch(/already used|unknown|expired/);
  });

  it('a guessed code or a page from elsewhere gets nothing', async () => {
    expect((await exchange('not-a-real-code-0000000000')).status).toBe(403);
    const foreign = await fetch(base() + LAUNCH_PATH, {
      method: 'POST',
      headers: { [LAUNCH_CODE_HEADER]: 'x', Origin: 'http://evil.test' },
    });
    expect(foreign.status).toBe(403);
    expect((await fetch(base() + LAUNCH_PATH)).status).toBe(405);
  });
});
