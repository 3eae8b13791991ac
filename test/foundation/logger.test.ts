import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { APP_VERSION } from '../../shared/version';
import { createLogger, redact } from '../../main/services/log/logger';
import { tempHome } from './helpers';

describe('logger', () => {
  it('redacts registered secrets, secret-named fields and auth headers', () => {
    const dir = tempHome();
    const log = createLogger({ dir, name: 't' });
    log.addSecret('s3cr3t-token-value');
    log.info('calling with s3cr3t-token-value', { apiToken: 'other', header: 'Basic dXNlcjpwYXNzd29yZA==', user: 'me' });
    const text = readFileSync(join(dir, 't.log'), 'utf8');
    expect(text).not.toContain('s3cr3t-token-value');
    expect(text).not.toContain('other');
    expect(text).not.toContain('dXNlcjpwYXNzd29yZA==');
    expect(text).toContain('"user":"me"');
    expect(redact('Bearer abcdefghijkl', [])).toBe('Bearer [redacted]');
  });

  it('rotates at the size limit and keeps the configured number of files', () => {
    const dir = tempHome();
    const log = createLogger({ dir, name: 'r', maxBytes: 2000, keep: 2 });
    for (let i = 0; i < 200; i++) log.info(`line ${i} ${'x'.repeat(50)}`);
    expect(existsSync(join(dir, 'r.log'))).toBe(true);
    expect(existsSync(join(dir, 'r.log.1'))).toBe(true);
    expect(existsSync(join(dir, 'r.log.2'))).toBe(true);
    expect(existsSync(join(dir, 'r.log.3'))).toBe(false);
    expect(readFileSync(join(dir, 'r.log'), 'utf8')).toContain('line 199');
  });

  it('APP_VERSION matches package.json', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(APP_VERSION).toBe(pkg.version);
  });
});
