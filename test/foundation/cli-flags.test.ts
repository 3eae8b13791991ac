import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDoctorCli } from '../../main/cli/doctor';
import { runCli } from '../../main/cli/index';
import { runVmManagerCli } from '../../main/vm-manager/cli';
import { tempDir } from '../support/temp-dirs';

/** Runs `povdesk …` in-process against a data directory that does not exist yet. */
async function povdesk(argv: string[], run: 'cli' | 'doctor' = 'cli') {
  const home = join(tempDir('povdesk-flags-'), 'home');
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s), env: { POVDESK_HOME: home } };
  const code = run === 'cli' ? await runCli(argv, io) : await runDoctorCli(argv, io);
  return { code, out: out.join(''), err: err.join(''), home };
}

describe('povdesk: flags by node:util parseArgs', () => {
  it('an unknown flag is refused naming it and --help, before anything touches the data directory', async () => {
    for (const argv of [
      ['call', 'settings.get', '{}', '--wiat'],
      ['call', '--json', 'settings.get'],
      ['serve', '--prot', '0'],
    ]) {
      const r = await povdesk(argv);
      expect(r.code, argv.join(' ')).toBe(1);
      const flag = argv.find((a) => a.startsWith('--'))!;
      expect(JSON.parse(r.err)).toEqual({ error: { code: 'invalid_request', message: `unknown option ${flag}; see povdesk --help` } });
      expect(existsSync(r.home), argv.join(' ')).toBe(false); // no core was made, so nothing changed
    }
    const doctor = await povdesk(['--bundel'], 'doctor');
    expect(doctor.code).toBe(1);
    expect(JSON.parse(doctor.err).error.message).toBe('unknown option --bundel; see povdesk doctor --help');
    expect(existsSync(doctor.home)).toBe(false);
  });

  it('a value missing or given to a switch is refused the same way; --port still checks its range', async () => {
    expect(JSON.parse((await povdesk(['serve', '--port'])).err).error.message).toBe('--port needs a value; see povdesk --help');
    expect(JSON.parse((await povdesk(['call', 'settings.get', '--wait=yes'])).err).error.message).toBe(
      '--wait takes no value; see povdesk --help',
    );
    expect(JSON.parse((await povdesk(['serve', '--port', '70000'])).err).error.message).toBe('--port takes a number from 0 to 65535');
  });
});

describe('povdesk vm-manager: flags by node:util parseArgs', () => {
  it('an unknown flag is refused with exit 2 naming it and --help; the state dir is not made', async () => {
    const state = join(tempDir('povdesk-vmm-flags-'), 'state');
    const err: string[] = [];
    const code = await runVmManagerCli(
      ['image', 'import', '/nonexistent.qcow2', '--nmae', 'x', '--state-dir', state],
      () => {},
      (s) => err.push(s),
      {},
    );
    expect(code).toBe(2);
    expect(err).toEqual(['vm-manager: invalid_request: unknown option --nmae; see povdesk vm-manager --help']);
    expect(existsSync(state)).toBe(false);

    const serveErr: string[] = [];
    expect(
      await runVmManagerCli(
        ['serve', '--state-dir', state, '--tokenfile', '/dev/null'],
        () => {},
        (s) => serveErr.push(s),
        {},
      ),
    ).toBe(2);
    expect(serveErr[0]).toMatch(/unknown option --tokenfile; see povdesk vm-manager --help/);
    expect(existsSync(state)).toBe(false);
    expect(readdirSync(join(state, '..'))).toEqual([]);
  });

  it('--learn-golden without an image still says learn mode is per image', async () => {
    const err: string[] = [];
    expect(
      await runVmManagerCli(
        ['serve', '--learn-golden', '--stop-vms-on-exit'],
        () => {},
        (s) => err.push(s),
        {},
      ),
    ).toBe(2);
    expect(err[0]).toMatch(/--learn-golden needs the image\(s\) to learn.*per image/);
  });
});
