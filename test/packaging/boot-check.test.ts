/**
 * scripts/boot-check.mjs is what the release workflow runs on macOS and Windows: one boot of the
 * test image through the packaged daemon bundle (out/vm-manager/vm-manager.mjs). Here it runs the
 * same way on Linux under TCG, and refuses a state dir with no images.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo, stateWithImage, vmSkip } from '../vm-manager/support';

const script = join(repo, 'scripts', 'boot-check.mjs');
const daemon = join(repo, 'out', 'vm-manager', 'vm-manager.mjs');
const skip = vmSkip() ?? (existsSync(daemon) ? null : `no ${daemon}: run npx electron-vite build first`);

describe.skipIf(skip)('scripts/boot-check.mjs', () => {
  it('boots the test image through the packaged daemon to ready, then deletes it', () => {
    const state = stateWithImage('boot-check-');
    try {
      const r = spawnSync(process.execPath, [script, state], { encoding: 'utf8', timeout: 240_000 });
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/boot-check: povdesk-test reached ready in [\d.]+ s/);
      expect(spawnSync('pgrep', ['-f', state]).status).toBe(1); // no qemu or swtpm left for that state dir
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 300_000);

  it('refuses a state dir without images, with the usage', () => {
    const empty = mkdtempSync(join(tmpdir(), 'boot-check-empty-'));
    try {
      const r = spawnSync(process.execPath, [script, empty], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('usage: node scripts/boot-check.mjs');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
