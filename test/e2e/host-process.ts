import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'out', 'main', 'cli.js');

export interface HostProcess {
  child: ChildProcess;
  openUrl: string;
  output: () => string;
}

/** Starts `povdesk serve` (the built CLI) and resolves with the URL it prints. */
export function startHostProcess(env: NodeJS.ProcessEnv, args: string[] = []): Promise<HostProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host did not start in 20 s:\n${out}`)), 20_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /serving (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, openUrl: m[1]!, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`host exited with ${code}:\n${out}`));
    });
  });
}

export async function stopHostProcess(h: HostProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (h.child.exitCode !== null || h.child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    h.child.once('exit', () => resolve());
    h.child.kill(signal);
  });
}
