// The contract's methods are built on first read (shared/contract/define.ts lazyMethods/joinLazy):
// listing them builds nothing, reading one builds that one once, and every entry still builds.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { joinLazy, lazyMethods, method, methods, noArgs } from '../../shared/contract';
import { methodHints } from '../../shared/contract/annotations';

describe('lazy contract methods', () => {
  it('builds an entry on its first read only, once, shared by the domain object and the joined one', () => {
    const built: string[] = [];
    const def = (name: string) => () => {
      built.push(name);
      return method(name, noArgs, z.strictObject({ n: z.number() }));
    };
    const a = lazyMethods({ 'a.one': def('a.one'), 'a.two': def('a.two') });
    const b = lazyMethods({ 'b.one': def('b.one') });
    const all = joinLazy(a, b);
    expect(Object.keys(all)).toEqual(['a.one', 'a.two', 'b.one']);
    expect('a.two' in all).toBe(true);
    expect(built).toEqual([]);
    const first = all['a.one'];
    expect(first.summary).toBe('a.one');
    expect(all['a.one']).toBe(first);
    expect(a['a.one']).toBe(first);
    expect(built).toEqual(['a.one']);
    expect(first.result.safeParse({ n: 1 }).success).toBe(true);
    expect(first.result.safeParse({ n: 1, extra: true }).success).toBe(false);
  });

  it('the real contract: entries are getters until read, and every one builds a schema pair', () => {
    const names = Object.keys(methods);
    // Every method keeps its entry (annotations.ts names each one).
    expect([...names].sort()).toEqual(Object.keys(methodHints).sort());
    expect(typeof Object.getOwnPropertyDescriptor(methods, 'app.info')?.get).toBe('function');
    for (const name of names) {
      const d = methods[name as keyof typeof methods];
      expect(d.args, name).toBeInstanceOf(z.ZodType);
      expect(d.result, name).toBeInstanceOf(z.ZodType);
      expect(typeof d.summary, name).toBe('string');
    }
  });
});
