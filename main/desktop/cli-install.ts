/**
 * "Install command-line tool": where the `povdesk` command goes on each kind of install, decided
 * without Electron (main/electron/desktop.ts carries it out from the menu):
 * - macOS: a symlink /usr/local/bin/povdesk → POV Desk.app/Contents/Resources/bin/povdesk;
 * - Linux AppImage: ~/.local/bin/povdesk, a small script that runs the AppImage's own runtime on a
 *   copy of the bootstrap kept in ~/.local/share/povdesk (the image's mount point changes every run,
 *   so the bootstrap finds the CLI through $APPDIR, which the AppImage runtime sets);
 * - the deb installs /usr/bin/povdesk and the Windows installer puts the launcher on PATH, so
 *   there is nothing to do there.
 */
import { join } from 'node:path';

export type CliInstall =
  | { kind: 'symlink'; link: string; target: string; sudoCommand: string }
  | { kind: 'appimage'; script: string; content: string; bootstrapFrom: string; bootstrapTo: string }
  | { kind: 'none'; reason: string };

const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function cliInstallPlan(o: {
  platform: NodeJS.Platform;
  resourcesPath: string;
  home: string;
  appImage?: string | undefined;
}): CliInstall {
  const launcher = join(o.resourcesPath, 'bin', 'povdesk');
  if (o.platform === 'darwin') {
    const link = '/usr/local/bin/povdesk';
    return { kind: 'symlink', link, target: launcher, sudoCommand: `sudo ln -sf ${shQuote(launcher)} ${link}` };
  }
  if (o.platform === 'linux' && o.appImage) {
    const bootstrapTo = join(o.home, '.local', 'share', 'povdesk', 'povdesk-cli.cjs');
    const content = [
      '#!/bin/sh',
      '# povdesk: written by POV Desk ("Install command-line tool"); runs the CLI inside this AppImage',
      '# with its own runtime. Choose the menu item again after moving the AppImage.',
      'ELECTRON_RUN_AS_NODE=1',
      'export ELECTRON_RUN_AS_NODE',
      `exec ${shQuote(o.appImage)} ${shQuote(bootstrapTo)} "$@"`,
      '',
    ].join('\n');
    return {
      kind: 'appimage',
      script: join(o.home, '.local', 'bin', 'povdesk'),
      content,
      bootstrapFrom: join(o.resourcesPath, 'bin', 'povdesk-cli.cjs'),
      bootstrapTo,
    };
  }
  if (o.platform === 'linux') return { kind: 'none', reason: 'the deb package installs /usr/bin/povdesk' };
  if (o.platform === 'win32') return { kind: 'none', reason: 'the installer put povdesk on your PATH (open a new terminal)' };
  return { kind: 'none', reason: `no command-line install for ${o.platform}` };
}
