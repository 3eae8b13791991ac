import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, SEEDS, type Emulator } from '../skytap-emulator';
import { envFor, freshHome, povdesk, run, type Proc } from './procs';

/**
 * Two processes on one POVDESK_HOME (issue 9): real `povdesk` processes, a real SQLite file, the
 * Skytap emulator over HTTP. The create POST is held for 3 s; a second process starts during it.
 */
let emu: Emulator;
const procs: Proc[] = [];
beforeEach(async () => {
  emu = await startEmulator({ seed: SEEDS.demo, timing: { createBusyMs: 200, runstateBusyMs: 200, deleteMs: 200 } });
});
afterEach(async () => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await emu.close();
});

const templateId = () => [...emu.state.templates.keys()][0]!;

describe('one owner per data directory', () => {
  it('a second process during a slow create neither interrupts the job nor creates a second environment', async () => {
    const home = freshHome();
    const env = envFor(home, emu.url);
    emu.faults.push({ match: 'POST /configurations', delayMs: 3000 });
    const a = povdesk(['call', 'pov.create', JSON.stringify({ templateId: templateId(), name: 'Race' }), '--wait'], env);
    procs.push(a);
    // The POST has reached the emulator (it is recorded on arrival) and is being held.
    while (emu.count('POST /configurations') === 0) {
      if (a.child.exitCode !== null) throw new Error(`A exited early:\n${a.err()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const b = await run(['call', 'settings.get', '{}'], env);
    expect(b.code, b.err).toBe(0);
    expect(JSON.parse(b.out)).toHaveProperty('skytap');
    expect(b.err, 'B was answered by A, the owner').toMatch(/runs in POV Desk \(pid \d+\)/);
    const serve = povdesk(['serve', '--port', '0'], env);
    procs.push(serve);
    // Today's code resumes the row here and POSTs again; the fix refuses to serve beside an owner.
    const served = await serve.waitFor(/serving http/).then(
      () => 'serving',
      () => 'exited',
    );
    const codeA = await a.exited;
    const job = JSON.parse(a.out());
    expect(job.state, a.err()).toBe('succeeded');
    expect(codeA).toBe(0);
    expect(emu.count('POST /configurations'), 'POSTs that reached Skytap').toBe(1);
    expect(emu.state.environmentIds()).toHaveLength(1);
    expect(served).toBe('exited');
    expect(await serve.exited).toBe(1);
    expect(serve.err()).toMatch(/pid \d+/);
  }, 120_000);
});
