import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envFor, freshHome, run } from './procs';

/**
 * keytar is an optional dependency (npm ci drops it when its native build fails): the app must
 * still start, keep secrets in memory and say so. A real `povdesk` process in which loading
 * keytar fails the way a missing module does.
 */
describe('without the keytar module', () => {
  it('povdesk starts and reports in-memory secrets with the reason', async () => {
    const home = freshHome();
    const hook = join(home, 'no-keytar.cjs');
    writeFileSync(
      hook,
      `const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'keytar') throw Object.assign(new Error("Cannot find module 'keytar'"), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};
`,
    );
    const env = envFor(home, 'http://127.0.0.1:9', { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${hook}` });
    const r = await run(['call', 'settings.get', '{}'], env);
    expect(r.code, r.err).toBe(0);
    const view = JSON.parse(r.out);
    expect(view.keyring).toMatchObject({ backend: 'memory', available: false });
    expect(view.keyring.message).toMatch(/keytar module could not load: Cannot find module 'keytar'/);
  }, 60_000);
});
