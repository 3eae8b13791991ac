import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tryAcquireOwnerLock } from '../../main/core/owner';
import { envFor, freshHome, povdesk, run, until, emulatorPerTest } from './procs';
import { JOB_KIND } from '../../shared/contract/job-kinds';

/**
 * Two processes on one POVDESK_HOME (issue 9): real `povdesk` processes, a real SQLite file, the
 * Skytap emulator over HTTP. The create POST is held for 3 s; a second process starts during it.
 */
const w = emulatorPerTest();

const templateId = () => [...w.emu.state.templates.keys()][0]!;

describe('one owner per data directory', () => {
  it('a second process during a slow create neither interrupts the job nor creates a second environment', async () => {
    const home = freshHome();
    const env = envFor(home, w.emu.url);
    // Skytap holds A's create until B and serve have met A as the owner, however slowly they start.
    let release = () => {};
    w.emu.faults.push({ match: 'POST /configurations', holdUntil: new Promise<void>((r) => (release = r)) });
    const a = povdesk(['call', 'pov.create', JSON.stringify({ templateId: templateId(), name: 'Race' }), '--wait'], env);
    w.procs.push(a);
    // The POST has reached the emulator (it is recorded on arrival) and is being held.
    while (w.emu.count('POST /configurations') === 0) {
      if (a.child.exitCode !== null) throw new Error(`A exited early:\n${a.err()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const serve = povdesk(['serve', '--port', '0'], env);
    w.procs.push(serve);
    const b = await run(['call', 'settings.get', '{}'], env);
    expect(b.code, b.err).toBe(0);
    expect(JSON.parse(b.out)).toHaveProperty('skytap');
    expect(b.err, 'B was answered by A, the owner').toMatch(/runs in POV Desk \(pid \d+\)/);
    // Today's code resumes the row here and POSTs again; the fix refuses to serve beside an owner.
    const served = await serve.waitFor(/serving http/).then(
      () => 'serving',
      () => 'exited',
    );
    release();
    const codeA = await a.exited;
    const job = JSON.parse(a.out());
    expect(job.state, a.err()).toBe('succeeded');
    expect(codeA).toBe(0);
    expect(w.emu.count('POST /configurations'), 'POSTs that reached Skytap').toBe(1);
    expect(w.emu.state.environmentIds()).toHaveLength(1);
    // No process marked A's live job interrupted on the way (today B did, then A overwrote it).
    const logs = readdirSync(join(home, 'logs'))
      .map((f) => readFileSync(join(home, 'logs', f), 'utf8'))
      .join('\n');
    expect(logs).not.toMatch(/marked interrupted/);
    expect(served).toBe('exited');
    expect(await serve.exited).toBe(1);
    expect(serve.err()).toMatch(/pid \d+/);
  }, 120_000);

  it('povdesk call pov.create --wait beside povdesk serve: the job runs in serve, the CLI holds no lock', async () => {
    const home = freshHome();
    const env = envFor(home, w.emu.url);
    const serve = povdesk(['serve', '--port', '0'], env);
    w.procs.push(serve);
    await serve.waitFor(/serving http/);
    const c = await run(['call', 'pov.create', JSON.stringify({ templateId: templateId(), name: 'Via owner' }), '--wait'], env);
    expect(c.code, c.err).toBe(0);
    const job = JSON.parse(c.out);
    expect(job).toMatchObject({ kind: JOB_KIND.povCreate, state: 'succeeded' });
    expect(c.err).toContain(`run by POV Desk (pid ${serve.child.pid})`);
    expect(c.err).toMatch(/\[running\] .*%/); // progress lines followed from the owner
    // The CLI never built a core (no cli.log) and serve still holds the lock.
    expect(existsSync(join(home, 'logs', 'cli.log'))).toBe(false);
    expect(tryAcquireOwnerLock(home, 'test')).toBeNull();
    const list = await run(['call', 'jobs.list', '{}'], env);
    expect(JSON.parse(list.out).jobs.map((j: { id: string }) => j.id)).toContain(job.id);
    expect(w.emu.count('POST /configurations')).toBe(1);
  }, 120_000);

  it('an owner SIGKILLed mid-create: the next owner starts at once, resumes the row and adopts the environment', async () => {
    const home = freshHome();
    const env = envFor(home, w.emu.url);
    // Skytap makes the environment at once but the answer is held: the POST is in flight when A dies.
    w.emu.faults.push({ match: 'POST /configurations', replyDelayMs: 10_000 });
    const a = povdesk(['call', 'pov.create', JSON.stringify({ templateId: templateId(), name: 'Killed' }), '--wait'], env);
    w.procs.push(a);
    await until(() => w.emu.state.environmentIds().length === 1, 60_000, 'the environment to exist');
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    const started = Date.now();
    const serve = povdesk(['serve', '--port', '0'], env);
    w.procs.push(serve);
    await serve.waitFor(/serving http/);
    const startMs = Date.now() - started;
    const pov = await until(
      async () => {
        const r = await run(['call', 'pov.list', '{}'], env);
        const p = JSON.parse(r.out).povs[0];
        return p?.state === 'active' ? p : null;
      },
      60_000,
      'the POV to become active',
    );
    expect(pov.envId).toBe(w.emu.state.environmentIds()[0]);
    expect(w.emu.state.environmentIds()).toHaveLength(1);
    expect(w.emu.count('POST /configurations')).toBe(1);
    const jobs = JSON.parse((await run(['call', 'jobs.list', '{}'], env)).out).jobs as { kind: string; state: string; title: string }[];
    expect(
      jobs
        .filter((j) => j.kind === JOB_KIND.povCreate)
        .map((j) => j.state)
        .sort(),
    ).toEqual(['interrupted', 'succeeded']);
    console.log(`next owner serving ${startMs} ms after the SIGKILL`);
  }, 120_000);
});
