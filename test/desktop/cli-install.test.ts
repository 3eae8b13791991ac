/**
 * The AppImage option of "Install command-line tool", run for real: the script it writes starts a
 * stand-in AppImage (which, like the real runtime, mounts the image and sets $APPDIR) and the
 * bootstrap copy finds the CLI inside through $APPDIR, under ELECTRON_RUN_AS_NODE=1.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliInstallPlan } from '../../main/desktop/cli-install';

const ROOT = join(__dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'cli-install-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('cliInstallPlan', () => {
  it('links /usr/local/bin/povdesk on macOS and says the sudo command when that needs rights', () => {
    const p = cliInstallPlan({ platform: 'darwin', resourcesPath: '/Applications/POV Desk.app/Contents/Resources', home: '/Users/se' });
    expect(p).toEqual({
      kind: 'symlink',
      link: '/usr/local/bin/povdesk',
      target: '/Applications/POV Desk.app/Contents/Resources/bin/povdesk',
      sudoCommand: "sudo ln -sf '/Applications/POV Desk.app/Contents/Resources/bin/povdesk' /usr/local/bin/povdesk",
    });
  });

  it('has nothing to do for the deb and Windows, whose installers put povdesk on PATH', () => {
    expect(cliInstallPlan({ platform: 'linux', resourcesPath: '/opt/POV Desk/resources', home: '/home/se' }).kind).toBe('none');
    expect(cliInstallPlan({ platform: 'win32', resourcesPath: 'C:\\x', home: 'C:\\Users\\se' }).kind).toBe('none');
  });

  it('writes an AppImage wrapper that runs the CLI inside the image through $APPDIR', () => {
    // The "mounted image": a runtime (Node standing in for Electron) and a CLI that prints what it got.
    const appDir = join(work, 'mount');
    mkdirSync(join(appDir, 'resources', 'cli'), { recursive: true });
    mkdirSync(join(appDir, 'resources', 'bin'), { recursive: true });
    copyFileSync(join(ROOT, 'resources', 'bin', 'povdesk-cli.cjs'), join(appDir, 'resources', 'bin', 'povdesk-cli.cjs'));
    writeFileSync(
      join(appDir, 'resources', 'cli', 'povdesk-cli.mjs'),
      'process.stdout.write(JSON.stringify({ args: process.argv.slice(2), asNode: process.env.ELECTRON_RUN_AS_NODE }));\n',
    );
    const appImage = join(work, "POV Desk-0.1.0 it's.AppImage");
    writeFileSync(appImage, `#!/bin/sh\nAPPDIR='${appDir}' exec '${process.execPath}' "$@"\n`);
    chmodSync(appImage, 0o755);

    const home = join(work, 'home');
    const plan = cliInstallPlan({ platform: 'linux', resourcesPath: join(appDir, 'resources'), home, appImage });
    if (plan.kind !== 'appimage') throw new Error(`expected an AppImage plan, got ${plan.kind}`);
    mkdirSync(dirname(plan.script), { recursive: true });
    mkdirSync(dirname(plan.bootstrapTo), { recursive: true });
    writeFileSync(plan.script, plan.content, { mode: 0o755 });
    copyFileSync(plan.bootstrapFrom, plan.bootstrapTo);

    const r = spawnSync(plan.script, ['pov.list', '{"includeDestroyed":true}'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ args: ['pov.list', '{"includeDestroyed":true}'], asNode: '1' });
  });
});
