import { join } from 'node:path';
import { addonFile, nativeProblems } from '../../scripts/native-abi.mjs';

export type NativeCheck = { ok: true; native: { sqliteBinding: string; keytarModule: string } } | { ok: false; message: string };

/**
 * The app's native modules (better-sqlite3, keytar) checked against this runtime's ABI before
 * anything loads them. Both are Node-API modules, so the one build in node_modules serves Node
 * (CLI, browser mode, tests) and Electron alike (docs/decisions/packaging.md, "Native modules"); the check
 * stays so that a module built for one ABI is a refusal to start with what to do, not a crash
 * later. No `electron` import: tested in Node.
 */
export function electronNative(appRoot: string, abi: string = process.versions.modules): NativeCheck {
  const dir = join(appRoot, 'node_modules');
  const problems = nativeProblems(dir, abi);
  if (problems.length) {
    return {
      ok: false,
      message:
        `POV Desk cannot start: its native modules do not load in this Electron (ABI ${abi}).\n\n${problems.join('\n')}\n\n` +
        'Reinstall them with `npm ci` in the project folder (or reinstall POV Desk). ' +
        `\`node scripts/native-abi.mjs --expect ${abi} ${dir}\` shows what is there.`,
    };
  }
  return { ok: true, native: { sqliteBinding: addonFile(dir, 'better-sqlite3'), keytarModule: join(dir, 'keytar') } };
}
