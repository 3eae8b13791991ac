// The contract's methods are built on first read (shared/contract/define.ts lazyMethods/joinLazy):
// listing them builds nothing, reading one builds that one once, and every entry still builds.
// Named schemas are built on first touch too (shared/lazy-schema.ts), and no module declares one
// eagerly (a new `export const x = z.…` would put its build back into every process's start).
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
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

describe('lazy named schemas', () => {
  it('builds on the first touch only, once, and behaves as the schema it builds', () => {
    let builds = 0;
    const inner = lazySchema(() => {
      builds++;
      return z.string().min(2).describe('a name of two letters or more');
    });
    const outer = lazySchema(() => z.strictObject({ name: inner, tags: z.array(inner).optional() }));
    const view = lazySchema(() => outer.extend({ id: z.number().int() }));
    expect(builds).toBe(0);
    expect(view.parse({ id: 1, name: 'ab', tags: ['cd'] })).toEqual({ id: 1, name: 'ab', tags: ['cd'] });
    expect(builds).toBe(1);
    const bad = view.safeParse({ id: 1.5, name: 'a', extra: 1 });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.') || i.code).sort()).toEqual(['id', 'name', 'unrecognized_keys']);
    expect(inner).toBeInstanceOf(z.ZodString);
    expect(outer).toBeInstanceOf(z.ZodObject);
    expect(Object.keys(outer.shape)).toEqual(['name', 'tags']);
    expect(inner.optional().safeParse(undefined).success).toBe(true);
    expect(inner.description).toBe('a name of two letters or more');
    // The description survives JSON Schema generation whether the proxy or the schema is met.
    const json = z.toJSONSchema(outer) as unknown as {
      properties: { name: { description?: string }; tags: { items: { description?: string } } };
    };
    expect(json.properties.name.description).toBe('a name of two letters or more');
    expect(json.properties.tags.items.description).toBe('a name of two letters or more');
    expect(builds).toBe(1);
  });

  it('no module under main/ or shared/ builds a named schema at import', () => {
    const root = join(import.meta.dirname, '..', '..');
    const files = execFileSync('git', ['ls-files', 'main', 'shared'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'));
    const eager: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(root, file), 'utf8');
      if (!text.includes("from 'zod'")) continue;
      const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      for (const st of sf.statements) {
        if (!ts.isVariableStatement(st)) continue;
        for (const d of st.declarationList.declarations) {
          let e = d.initializer;
          while (e && (ts.isCallExpression(e) || ts.isPropertyAccessExpression(e) || ts.isNonNullExpression(e))) e = e.expression;
          if (e && ts.isIdentifier(e) && e.text === 'z') {
            eager.push(
              `${relative(root, join(root, file))}:${sf.getLineAndCharacterOfPosition(d.getStart(sf)).line + 1} ${d.name.getText(sf)}`,
            );
          }
        }
      }
    }
    expect(eager, 'declare these with lazySchema(() => …)').toEqual([]);
  });
});
