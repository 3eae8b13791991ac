import { useCallback, useRef, useState } from 'react';

/**
 * A form's fields, seeded from what the core holds without writing over what the person typed.
 *
 * A settings form renders at once and asks the core for its saved values; the answer can come
 * after the first keystrokes (a keychain lookup on the way). Copying the answer into every field
 * then wiped them: the username went back to empty, the browser refused the submit as a required
 * field, and the Save click did nothing at all (a CI run caught it in secrets-scan.spec).
 *
 * - `edit(key, value)`: what the inputs call; the field is the person's from then on.
 * - `seed(values)`: fills the fields nobody has edited (a load, a refresh).
 * - `seed(values, { saved: true })`: after a save, the saved values are the fields again.
 */
export function useDraft<T extends Record<string, string | boolean>>(initial: T) {
  const [draft, setDraft] = useState(initial);
  const edited = useRef(new Set<keyof T>());
  const edit = useCallback(<K extends keyof T>(key: K, value: T[K]) => {
    edited.current.add(key);
    setDraft((d) => ({ ...d, [key]: value }));
  }, []);
  const seed = useCallback((values: T, opts: { saved?: boolean } = {}) => {
    if (opts.saved) edited.current.clear();
    setDraft((d) => {
      const next = { ...d };
      for (const key of Object.keys(values) as (keyof T)[]) if (!edited.current.has(key)) next[key] = values[key];
      return next;
    });
  }, []);
  return { draft, edit, seed };
}
