import { z } from 'zod';

/**
 * A named schema built the first time anything touches it. Every module that declares schemas is
 * evaluated when a process starts (the host, the CLI, the vm-manager), and building ~2,000 zod
 * objects was the largest part of the host's cold start that the first answer did not need
 * (docs/decisions/foundation.md, "Named schemas are lazy"). The value is a Proxy that builds the schema on
 * its first property read and forwards to it from then on, so `parse`, `.optional()`, `.shape`,
 * `instanceof` and `z.infer<typeof x>` behave as on the schema itself; its description (from
 * `.describe()`) is registered for the proxy too, so JSON Schema generated from either keeps it.
 * Own keys are not forwarded (a Proxy may not report the schema's non-configurable `_zod` as its
 * own): spread or `Object.keys` a schema's `.shape`, not the schema.
 */
export function lazySchema<T extends z.ZodType>(build: () => T): T {
  let real: T | undefined;
  const target = Object.create(null) as T;
  const proxy: T = new Proxy(target, {
    get: (_, key) => {
      const schema = built();
      return Reflect.get(schema, key, schema);
    },
    set: (_, key, value) => {
      const schema = built();
      return Reflect.set(schema, key, value, schema);
    },
    has: (_, key) => Reflect.has(built(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(built()),
  });
  function built(): T {
    if (real === undefined) {
      real = build();
      const meta = z.globalRegistry.get(real);
      if (meta) z.globalRegistry.add(proxy, meta);
    }
    return real;
  }
  return proxy;
}
