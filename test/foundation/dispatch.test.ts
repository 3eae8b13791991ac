import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract';
import { Dispatcher } from '../../main/core/dispatch';
import { createLogger } from '../../main/services/log/logger';

const log = createLogger({ dir: null, name: 'test' });

describe('Dispatcher', () => {
  let ran = 0;
  afterEach(() => (ran = 0));
  const d = new Dispatcher(
    {
      'jobs.get': () => {
        ran++;
        throw new AppError('not_found', 'no such job');
      },
      'jobs.cancel': () => {
        ran++;
        return { ok: true as const };
      },
      'app.info': () => {
        ran++;
        return { version: 1 } as never;
      },
    },
    log,
  );

  it.each([
    ['wrong type', 'jobs.cancel', { id: 42 }],
    ['extra field', 'jobs.cancel', { id: 'x', extra: true }],
    ['missing field', 'jobs.cancel', {}],
    ['not an object', 'jobs.cancel', 'x'],
    ['unknown method', 'jobs.nuke', {}],
    ['prototype key as method', '__proto__', {}],
  ])('refuses %s with invalid_request before any handler runs', async (_label, method, args) => {
    await expect(d.call(method, args, { transport: 'test' })).rejects.toMatchObject({ code: 'invalid_request' });
    expect(ran).toBe(0);
  });

  it('names the offending field', async () => {
    await expect(d.call('jobs.cancel', { id: 42 }, { transport: 'test' })).rejects.toThrow(/id:/);
  });

  it('runs a valid call and passes AppErrors through', async () => {
    await expect(d.call('jobs.cancel', { id: 'x' }, { transport: 'test' })).resolves.toEqual({ ok: true });
    await expect(d.call('jobs.get', { id: 'x' }, { transport: 'test' })).rejects.toMatchObject({ code: 'not_found' });
    expect(ran).toBe(2);
  });

  it('turns a result outside the contract into internal', async () => {
    await expect(d.call('app.info', {}, { transport: 'test' })).rejects.toMatchObject({ code: 'internal' });
  });

  it('says unsupported for a contract method with no handler', async () => {
    await expect(d.call('settings.get', {}, { transport: 'test' })).rejects.toMatchObject({ code: 'unsupported' });
  });
});
