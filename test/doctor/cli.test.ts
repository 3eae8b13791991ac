import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, freshHome, run } from '../owner/procs';
import { SEEDS, startEmulator, type Emulator } from '../skytap-emulator';

/** `povdesk doctor` as a person runs it: the real CLI, a fresh data directory, Skytap from the environment. */
describe('povdesk doctor', () => {
  let emu: Emulator;
  const TOKEN = 'doctor-cli-token-51c0ffee';
  beforeAll(async () => {
    emu = await startEmulator({ seed: SEEDS.demo, credentials: { username: 'demo', token: TOKEN } });
  });
  afterAll(() => emu.close());

  it('prints each check in words, exits 0; a contradicted assumption exits 2; --bundle prints the file, which holds no token', async () => {
    const env = envFor(freshHome(), emu.url, { SKYTAP_API_TOKEN: TOKEN });
    const ok = await run(['doctor'], env);
    expect(ok.err).toBe('');
    expect(ok.out).toMatch(/^confirmed +skytap\.account +\(Skytap demo at /m);
    expect(ok.out).toMatch(/^could not tell +vm\.remote-host/m);
    expect(ok.out).toMatch(/\d+ confirmed, 0 contradicted, \d+ could not tell/);
    expect(ok.code).toBe(0);
    emu.breaks.paging = true;
    const broken = await run(['doctor', '--bundle'], env);
    expect(broken.out).toMatch(/^contradicted +skytap\.paging[^\n]*\n +asked for count=1/m);
    expect(broken.code).toBe(2);
    const file = /^support bundle: (.+)$/m.exec(broken.out)?.[1];
    expect(file).toBeDefined();
    expect(readFileSync(file!, 'utf8')).toContain('skytap.paging');
    expect(readFileSync(file!).includes(Buffer.from(TOKEN))).toBe(false);
    expect((await run(['doctor', '--nope'], env)).code).toBe(1);
  }, 90_000);
});
