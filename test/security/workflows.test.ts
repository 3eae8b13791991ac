/**
 * Issue 33 item 8: the release workflow's secrets and third-party code. GitHub cannot be reached
 * from here, so the workflows are read: every action pinned by commit SHA (with the version in a
 * comment), the signing secrets only in the packaging step of the `release`-environment job that
 * runs on a tag push only, and that step's shell refusing to build without them (run here with
 * bash and a stand-in npx). Also the macOS decision: library validation stays on.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { tempDir } from '../support/temp-dirs';

const ROOT = join(__dirname, '..', '..');
const DIR = join(ROOT, '.github', 'workflows');
const FILES = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  if?: string;
  environment?: string;
  env?: Record<string, string>;
  steps: Step[];
  needs?: string | string[];
}
interface Workflow {
  on: Record<string, unknown>;
  jobs: Record<string, Job>;
}
const load = (f: string) => parse(readFileSync(join(DIR, f), 'utf8')) as Workflow;
const release = () => load('release.yml');

/** Every `secrets.X` a value names. */
const secretsIn = (v: unknown): string[] => [...JSON.stringify(v ?? null).matchAll(/secrets\.(\w+)/g)].map((m) => m[1]!);
const SIGNING = ['CSC_LINK', 'CSC_KEY_PASSWORD', 'APPLE_ID', 'APPLE_APP_SPECIFIC_PASSWORD', 'APPLE_TEAM_ID'];

describe('release workflow: secrets and pinned code', () => {
  it('pins every action by a full commit SHA, with its version in a comment (a tag is refused)', () => {
    const bad: string[] = [];
    for (const f of FILES) {
      for (const line of readFileSync(join(DIR, f), 'utf8').split('\n')) {
        const m = /^\s*(?:-\s*)?uses:\s*(\S+)(.*)$/.exec(line);
        if (!m) continue;
        const [, ref, rest] = m;
        if (ref!.startsWith('./')) continue; // an action of this repository
        if (!/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/.test(ref!) || !/^\s*#\s*v\d+\.\d+\.\d+\s*$/.test(rest!))
          bad.push(`${f}: ${line.trim()}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('the signing secrets reach one step: the installers, in the release-environment package job, on a tag push only', () => {
    const w = release();
    const where: string[] = [];
    for (const [jn, j] of Object.entries(w.jobs)) {
      if (secretsIn(j.env).length) where.push(`${jn}: job env`);
      j.steps.forEach((s, i) => {
        for (const sec of secretsIn(s)) if (sec !== 'GITHUB_TOKEN') where.push(`${jn}: ${s.name ?? s.uses ?? i}: ${sec}`);
      });
    }
    expect(where.sort()).toEqual(SIGNING.map((s) => `package: Installers (signed; notarized on macOS): ${s}`).sort());
    const pkg = w.jobs.package!;
    expect(pkg.environment).toBe('release');
    expect(pkg.if).toBe("github.event_name == 'push' && startsWith(github.ref, 'refs/tags/v')");
    expect(w.jobs.release!.if).toBe(pkg.if);
    // every other job runs without the environment (its secrets are not readable there)
    expect(
      Object.entries(w.jobs)
        .filter(([, j]) => j.environment)
        .map(([n]) => n),
    ).toEqual(['package']);
    // the tests, npm ci of the test jobs and Playwright run in verify, which the secrets never reach
    const verify = JSON.stringify(w.jobs.verify);
    expect(verify).toContain('npx playwright test');
    expect(verify).toContain('npx vitest run');
    expect(JSON.stringify(pkg)).not.toMatch(/vitest|playwright/);
    // Linux packages are not signed: the step's values are empty there
    const env = pkg.steps.find((s) => s.name?.startsWith('Installers'))!.env!;
    for (const s of ['CSC_LINK', 'CSC_KEY_PASSWORD']) expect(env[s]).toBe(`\${{ matrix.platform != 'linux' && secrets.${s} || '' }}`);
    for (const s of ['APPLE_ID', 'APPLE_APP_SPECIFIC_PASSWORD', 'APPLE_TEAM_ID'])
      expect(env[s]).toBe(`\${{ matrix.platform == 'mac' && secrets.${s} || '' }}`);
  });

  it('workflow_dispatch is a dry run: it cannot reach the package and release jobs', () => {
    const w = release();
    expect(Object.keys(w.on).sort()).toEqual(['push', 'workflow_dispatch']);
    expect(w.on.push).toEqual({ tags: ['v*'] });
    for (const n of ['package', 'release']) expect(w.jobs[n]!.if, n).toMatch(/^github\.event_name == 'push' && /);
  });

  describe("the installer step's shell (bash, a stand-in npx that records its arguments)", () => {
    const dir = tempDir('release-step-');
    const npx = join(dir, 'npx');
    writeFileSync(npx, `#!/bin/sh\necho "$@" > "${join(dir, 'called')}"\n`);
    chmodSync(npx, 0o755);
    const step = release().jobs.package!.steps.find((s) => s.name?.startsWith('Installers'))!;
    const script = step.run!.replace(/\$\{\{ matrix\.builder \}\}/g, '--mac dmg');
    const run = (env: Record<string, string>) => {
      writeFileSync(join(dir, 'called'), '');
      const r = spawnSync('bash', ['-e', '-c', script], { env: { PATH: `${dir}:${process.env.PATH}`, ...env }, encoding: 'utf8' });
      return { code: r.status, out: r.stdout + r.stderr, npx: readFileSync(join(dir, 'called'), 'utf8').trim() };
    };
    const all = Object.fromEntries(SIGNING.map((s) => [s, `value-of-${s}`]));

    it('macOS or Windows without a secret: refuses before electron-builder runs, naming what is missing', () => {
      const { APPLE_TEAM_ID: _, ...noTeam } = all;
      const mac = run({ PLATFORM: 'mac', ...noTeam });
      expect(mac.code).toBe(1);
      expect(mac.out).toMatch(/::error::the release environment lacks APPLE_TEAM_ID: refusing to ship an unsigned mac installer/);
      expect(mac.npx).toBe('');
      const win = run({ PLATFORM: 'win' });
      expect(win.code).toBe(1);
      expect(win.out).toMatch(/lacks CSC_LINK CSC_KEY_PASSWORD/);
      expect(win.npx).toBe('');
    });

    it('with every secret: electron-builder with forceCodeSigning; Linux: no signing flag', () => {
      expect(run({ PLATFORM: 'mac', ...all })).toMatchObject({
        code: 0,
        npx: 'electron-builder --mac dmg --publish never -c.forceCodeSigning=true',
      });
      expect(run({ PLATFORM: 'win', CSC_LINK: 'x', CSC_KEY_PASSWORD: 'y' })).toMatchObject({
        code: 0,
        npx: 'electron-builder --mac dmg --publish never -c.forceCodeSigning=true',
      });
      expect(run({ PLATFORM: 'linux' })).toMatchObject({ code: 0, npx: 'electron-builder --mac dmg --publish never' });
    });
  });

  it('macOS: library validation stays on (no disable-library-validation), checked on the signed app by the release', () => {
    const plist = readFileSync(join(ROOT, 'resources', 'build', 'entitlements.mac.plist'), 'utf8');
    execFileSync('xmllint', ['--noout', join(ROOT, 'resources', 'build', 'entitlements.mac.plist')]);
    expect(plist).not.toContain('<key>com.apple.security.cs.disable-library-validation</key>');
    expect(plist).toContain('com.apple.security.cs.allow-jit');
    const check = release().jobs.package!.steps.find((s) => /library validation/.test(s.name ?? ''))!;
    expect(check.if).toBe("matrix.platform == 'mac'");
    expect(check.run).toMatch(/codesign --verify --deep --strict/);
    expect(check.run).toMatch(/ELECTRON_RUN_AS_NODE=1 .*process\.dlopen/);
  });
});
