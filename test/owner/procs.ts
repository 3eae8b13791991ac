import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { startEmulator, SEEDS, type Emulator } from '../skytap-emulator';
import { tempDir } from '../support/temp-dirs';

/** Real `povdesk` processes (the TypeScript sources through tsx, as bin/povdesk.mjs runs them). */
export const BIN = join(__dirname, '..', '..', 'bin', 'povdesk.mjs');

/** A new data directory, removed (its vm-manager stopped) after the test file that made it. */
export function freshHome(): string {
  return tempDir('pd-own-');
}

export function envFor(home: string, emuUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    POVDESK_FROM_SOURCE: '1',
    POVDESK_HOME: home,
    POVDESK_SKYTAP_POLL_MS: '50',
    SKYTAP_URL: emuUrl,
    SKYTAP_USERNAME: 'demo',
    SKYTAP_API_TOKEN: 'demo-token',
    ...extra,
  };
}

export interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves once stdout+stderr match. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpExecArray>;
}

export function povdesk(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  const poke = () => waiters.splice(0).forEach((w) => w());
  child.stdout!.on('data', (b: Buffer) => ((out += b.toString()), poke()));
  child.stderr!.on('data', (b: Buffer) => ((err += b.toString()), poke()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => (poke(), resolve(code ?? sig ?? -1))));
  return {
    child,
    out: () => out,
    err: () => err,
    exited,
    waitFor(re, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${re} in ${ms} ms:\n--- stdout\n${out}\n--- stderr\n${err}`)), ms);
        const check = () => {
          const m = re.exec(out + '\n' + err);
          if (m) {
            clearTimeout(timer);
            return resolve(m);
          }
          if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            return reject(new Error(`exited before ${re}:\n--- stdout\n${out}\n--- stderr\n${err}`));
          }
          waiters.push(check);
        };
        check();
      });
    },
  };
}

/** Runs one command to its end. */
export async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | string; out: string; err: string }> {
  const p = povdesk(args, env);
  const code = await p.exited;
  return { code, out: p.out(), err: p.err() };
}

export async function until<T>(
  fn: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  ms = 30_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A fresh Skytap emulator (demo seed, fast timings) before each test of the file, and after it the
 * emulator closed and every `povdesk` process the test pushed to `procs` killed.
 */
export function emulatorPerTest(): { emu: Emulator; procs: Proc[] } {
  const w = { emu: undefined as unknown as Emulator, procs: [] as Proc[] };
  beforeEach(async () => {
    w.emu = await startEmulator({ seed: SEEDS.demo, timing: { createBusyMs: 200, runstateBusyMs: 200, deleteMs: 200 } });
  });
  afterEach(async () => {
    for (const p of w.procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await w.emu.close();
  });
  return w;
}
