import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../main/services/store/migrations';
import { startEmulator, SEEDS } from '../skytap-emulator';
import { envFor, freshHome, run } from './procs';

/** Two processes starting on a fresh home at the same moment (issue 9), 20 times each way. */
const CHILD = join(__dirname, 'open-child.ts');
const newest = Math.max(...migrations.map((m) => m.version));

function openAt(file: string, at: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', CHILD, file, String(at)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('a fresh home opened by two processes at once', () => {
  it('openDatabase: both migrate-or-see-migrated, 20 times', async () => {
    const failures: string[] = [];
    for (let i = 0; i < 20; i++) {
      const file = join(freshHome(), 'povdesk.db');
      const at = Date.now() + 1500; // both children are loaded by then
      const [a, b] = await Promise.all([openAt(file, at), openAt(file, at)]);
      for (const r of [a, b]) if (r.code !== 0 || r.out.trim() !== `opened ${newest}`) failures.push(`run ${i}: ${r.out}${r.err}`);
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it('povdesk call settings.get twice at once: both answer, 20 times', async () => {
    const emu = await startEmulator({ seed: SEEDS.demo });
    try {
      const failures: string[] = [];
      for (let i = 0; i < 20; i++) {
        const env = envFor(freshHome(), emu.url);
        const both = await Promise.all([run(['call', 'settings.get', '{}'], env), run(['call', 'settings.get', '{}'], env)]);
        for (const r of both) {
          if (r.code !== 0) failures.push(`run ${i}: exit ${r.code}: ${r.err}`);
          else expect(JSON.parse(r.out)).toHaveProperty('skytap');
        }
      }
      expect(failures).toEqual([]);
    } finally {
      await emu.close();
    }
  }, 300_000);
});
