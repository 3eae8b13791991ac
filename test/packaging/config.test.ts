/**
 * electron-builder.yml: valid for the pinned electron-builder (its own loader and schema check),
 * and shaped the way the app needs at run time.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT, builderRequire } from './pack';

interface Target {
  target: string;
  arch: string[];
}
type Config = Record<string, any>;

const configModule = builderRequire('app-builder-lib/out/util/config/config.js') as {
  getConfig(dir: string, path: string | null, fromOptions: unknown): Promise<Config>;
  validateConfiguration(config: Config, logger: unknown): Promise<void>;
};
const { DebugLogger } = builderRequire('builder-util') as { DebugLogger: new (enabled: boolean) => unknown };

const raw = (): Config => parse(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8')) as Config;
const targets = (platform: Config): Record<string, string[]> =>
  Object.fromEntries((platform.target as Target[]).map((t) => [t.target, [...t.arch].sort()]));

describe('electron-builder.yml', () => {
  it('passes electron-builder’s own configuration check, and that check rejects a misspelt key', async () => {
    const config = await configModule.getConfig(ROOT, null, null);
    await expect(configModule.validateConfiguration(config, new DebugLogger(false))).resolves.toBeUndefined();
    const misspelt = { ...config, linux: { ...config.linux, tagret: config.linux.target } };
    await expect(configModule.validateConfiguration(misspelt, new DebugLogger(false))).rejects.toThrow(
      /configuration object that does not match the API schema/,
    );
  });

  it('builds AppImage + deb, dmg (+ the zip updates use) for x64 and arm64, and an NSIS installer', () => {
    const c = raw();
    expect(targets(c.linux)).toEqual({ AppImage: ['x64'], deb: ['x64'] });
    expect(targets(c.mac)).toEqual({ dmg: ['arm64', 'x64'], zip: ['arm64', 'x64'] });
    expect(targets(c.win)).toEqual({ nsis: ['x64'] });
    expect(c.appId).toBe('com.povdesk.desktop');
    expect(c.productName).toBe('POV Desk');
  });

  it('names the files and icons that exist in the repository', () => {
    const c = raw();
    for (const rel of [
      c.icon,
      c.mac.entitlements,
      c.nsis.include,
      'resources/bin/povdesk',
      'resources/bin/povdesk.cmd',
      'resources/bin/povdesk-cli.cjs',
      'resources/icons/tray.png',
    ]) {
      expect(() => readFileSync(join(ROOT, rel))).not.toThrow();
    }
    const png = readFileSync(join(ROOT, c.icon));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBeGreaterThanOrEqual(512); // macOS and Windows icons are made from it
  });

  it('ships the app from out/, unpacks native addons, and puts the daemon, the CLI, launchers and icons outside the asar', () => {
    const c = raw();
    expect(c.asar).toBe(true);
    expect(c.files).toEqual(
      expect.arrayContaining([
        'package.json',
        'out/main/**',
        'out/preload/**',
        'out/renderer/**',
        '!out/vm-manager/**',
        '!out/cli/**',
        '!node_modules/cpu-features/**',
      ]),
    );
    expect(c.asarUnpack).toContain('**/*.node');
    const extra = Object.fromEntries((c.extraResources as { from: string; to: string }[]).map((e) => [e.to, e.from]));
    expect(extra).toEqual({
      'vm-manager': 'out/vm-manager',
      cli: 'out/cli',
      'cli/node_modules': 'out/cli/node_modules',
      bin: 'resources/bin',
      icons: 'resources/icons',
    });
    expect(c.electronFuses).toEqual({ runAsNode: true });
    // Node-API modules only: nothing to rebuild for Electron (docs/decisions/packaging.md, "Native modules")
    expect(c.npmRebuild).toBe(false);
  });

  it('registers povdesk:// links, installs the CLI on PATH, and publishes to the release feed', () => {
    const c = raw();
    expect(c.protocols).toEqual([{ name: 'POV Desk link', schemes: ['povdesk'] }]);
    expect(c.deb.fpm).toEqual(['resources/bin/povdesk=/usr/bin/povdesk']);
    expect(c.linux.executableName).toBe('povdesk-desktop');
    expect(c.win.executableName).toBe('povdesk-desktop');
    const nsh = readFileSync(join(ROOT, c.nsis.include), 'utf8');
    expect(nsh).toMatch(/!macro customInstall[\s\S]*\$INSTDIR\\resources\\bin[\s\S]*!macroend/);
    expect(nsh).toMatch(/!macro customUnInstall[\s\S]*!macroend/);
    expect(c.publish).toEqual([{ provider: 'github', releaseType: 'release' }]);
  });

  it('pins electron-builder, Electron and better-sqlite3 to the pair docs/decisions.md names', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Config;
    expect(pkg.devDependencies['electron-builder']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.devDependencies.electron).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.dependencies['better-sqlite3']).toMatch(/^\d+\.\d+\.\d+$/);
    const decisions = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8');
    expect(decisions).toContain(`Electron ${pkg.devDependencies.electron}`);
    expect(decisions).toContain(`better-sqlite3 ${pkg.dependencies['better-sqlite3']}`);
  });
});
