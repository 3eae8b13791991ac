import { join } from 'node:path';
import { NATIVE_MODULES, nativeProblems } from '../../scripts/native-abi.mjs';

export type NativeCheck =
  | { ok: true; native: { sqliteBinding: string; keytarModule: string } }
  | { ok: false; message: string };

/**
 * Electron's copies of better-sqlite3 and keytar (rebuilt for its ABI by `npm start`, see
 * scripts/electron-native.mjs), checked against this runtime's ABI before anything loads them. The
 * Node build in node_modules would fail to load (or crash) under Electron, so a mismatch is a
 * refusal to start with what to do, not a broken database later. No `electron` import: tested in Node.
 */
export function electronNative(env: NodeJS.ProcessEnv, appRoot: string, abi: string = process.versions.modules): NativeCheck {
  const dir = env.POVDESK_NATIVE_DIR || join(appRoot, '.electron-native', 'node_modules');
  const problems = nativeProblems(dir, abi);
  if (problems.length) {
    return {
      ok: false,
      message:
        `POV Desk cannot start: its native modules are not built for this Electron (ABI ${abi}).\n\n${problems.join('\n')}\n\n` +
        'Start it with `npm start` in the project folder: it rebuilds better-sqlite3 and keytar for Electron into .electron-native/. ' +
        `\`node scripts/native-abi.mjs --expect ${abi} ${dir}\` shows what is there.`,
    };
  }
  return { ok: true, native: { sqliteBinding: join(dir, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']), keytarModule: join(dir, 'keytar') } };
}
