import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methods } from '../../shared/contract';
import { helpText } from '../../main/cli/index';
import { startEmulator, SEEDS, type Emulator } from '../skytap-emulator';
import { tempHome } from './helpers';
import { JOB_KIND } from '../../shared/contract/job-kinds';

const run = promisify(execFile);
const BIN = join(__dirname, '..', '..', 'bin', 'povdesk.mjs');

describe('povdesk CLI', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ seed: SEEDS.demo, credentials: { username: 'demo', token: 'demo-token' } });
  });
  afterAll(() => emu.close());

  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [BIN, ...args], {
      env: { ...process.env, POVDESK_FROM_SOURCE: '1', POVDESK_HOME: tempHome(), POVDESK_SKYTAP_POLL_MS: '50', ...env },
    });

  it('--help lists every contract method with its arguments', () => {
    const text = helpText();
    for (const name of Object.keys(methods)) expect(text).toContain(`  ${name} `);
    expect(text).toMatch(/jobs\.get\s+\{ id: string \}/);
  });

  it('prints a JSON result and exits 0', async () => {
    const { stdout } = await cli(['call', 'app.info', '{}']);
    expect(JSON.parse(stdout)).toMatchObject({ version: expect.any(String) });
  }, 30_000);

  it('--wait follows a job to its end and prints its outcome', async () => {
    const env = { SKYTAP_URL: emu.url, SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token' };
    const { stdout } = await cli(['call', 'reconcile.runNow', '{}', '--wait'], env);
    const job = JSON.parse(stdout);
    expect(job).toMatchObject({ kind: JOB_KIND.reconcile, state: 'succeeded' });
  }, 60_000);

  it('a failed job exits 1 with its error on stderr', async () => {
    const env = { SKYTAP_URL: emu.url, SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'wrong' };
    const err = await cli(['call', 'pov.create', '{"templateId":"500","name":"x"}', '--wait'], env).then(
      () => null,
      (e: { code: number; stderr: string; stdout: string }) => e,
    );
    expect(err?.code).toBe(1);
    const last = JSON.parse(err!.stderr.trim().split('\n').pop()!);
    expect(last.error.code).toBe('unauthorized');
    expect(last.error.message).toMatch(/API security token/);
  }, 60_000);

  it('refuses arguments that are not JSON', async () => {
    const err = await cli(['call', 'jobs.get', '{id:']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(1);
    expect(JSON.parse(err!.stderr.trim())).toMatchObject({ error: { code: 'invalid_request' } });
  }, 30_000);
});
