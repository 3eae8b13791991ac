// ESLint (flat config), run by `npm run lint` and `npm test` with --max-warnings 0. typescript-eslint's
// recommended rules without type information (a type-aware run costs minutes per `npm test`; tsc -b
// already type-checks), React's hook rules for renderer/, and the layers of docs/CONVENTIONS.md as
// the rule `povdesk/layers` below. Formatting is Prettier's (.prettierrc), not ESLint's.
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const ROOT = dirname(fileURLToPath(import.meta.url));
const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const under = (path, dir) => path === dir || path.startsWith(`${dir}/`);

/**
 * Where a layer's files may import from (docs/CONVENTIONS.md, "Layers"). A relative import is
 * resolved against the importing file, so `../../main/x` is judged by where it lands, not by its
 * text (which is why this is not `no-restricted-imports`: that rule matches the specifier's text,
 * whose meaning changes with the file's depth, and skips `import()`). Static imports, `export … from`,
 * `import()` and `import('…')` types all count, as in test/foundation/layers.test.ts (which keeps
 * what one file cannot show: import circles and the daemon's entry points).
 */
const layers = {
  meta: {
    type: 'problem',
    schema: [
      {
        type: 'object',
        properties: {
          layer: { type: 'string' },
          inside: { type: 'array', items: { type: 'string' } },
          node: { type: 'boolean' },
          electron: { type: 'boolean' },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      outside: '{{layer}} imports only {{inside}}: {{target}} is outside (docs/CONVENTIONS.md, Layers)',
      node: '{{layer}} runs without Node: no {{name}} (docs/CONVENTIONS.md, Layers)',
      electron: 'only main/electron/ and preload/ import electron (docs/CONVENTIONS.md, Layers)',
    },
  },
  create(context) {
    const { layer, inside, node = true, electron = false } = context.options[0] ?? {};
    const check = (source) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
      const name = source.value;
      if (name.startsWith('.')) {
        const target = relative(ROOT, resolve(dirname(context.filename), name))
          .split('\\')
          .join('/');
        if (inside && !inside.some((d) => under(target, d)))
          context.report({ node: source, messageId: 'outside', data: { layer, inside: inside.join(', '), target } });
      } else if (!node && NODE_BUILTINS.has(name)) context.report({ node: source, messageId: 'node', data: { layer, name } });
      else if (!electron && (name === 'electron' || name.startsWith('electron/'))) context.report({ node: source, messageId: 'electron' });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSImportType: (n) => check(n.source),
      TSExternalModuleReference: (n) => check(n.expression),
    };
  },
};

/** One config object per layer, so each file gets exactly one set of `povdesk/layers` options. */
const layer = (dir, options) => ({
  files: [`${dir}/**/*.{ts,tsx}`],
  rules: { 'povdesk/layers': ['error', { layer: `${dir}/`, ...options }] },
});

export default defineConfig(
  {
    ignores: ['out/', 'dist/', '.runtime/', '.cache/', '.cache-test/', 'test-results/', 'playwright-report/', '**/generated/'],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: { ...globals.node } },
    plugins: { povdesk: { rules: { layers } } },
    rules: {
      // `_` marks an argument a signature needs but the body does not, and `...rest` that drops keys.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // Control characters in a regular expression are the point here: input validation refuses
      // them (shared/contract), terminal output is stripped of ANSI escapes.
      'no-control-regex': 'off',
    },
  },
  {
    // The two classic hook rules. The plugin's recommended set adds the React Compiler's rules
    // (set-state-in-effect, refs, purity, …): they judge code for a compiler this app does not run,
    // and its pass was ~60 % of the whole lint's CPU time.
    files: ['renderer/**/*.{ts,tsx}', 'test/renderer/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: { globals: { ...globals.browser } },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  {
    // Tests read untyped JSON (MCP answers, Chrome traces, YAML) and assert on its shape: the
    // assertion is the check, a type for every answer would only restate it.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // No line over Prettier's printWidth (.prettierrc): Prettier does not break strings, comments or
    // test names, so those are wrapped by hand (split with `+`). URLs and regex literals may run long.
    // ESLint 10 still ships the core max-len (deprecated, kept until ESLint 11; its successor is
    // @stylistic/eslint-plugin's max-len).
    rules: { 'max-len': ['error', { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true }] },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  // The layers (docs/CONVENTIONS.md): where each part of the tree may import from.
  layer('main', {}),
  layer('main/electron', { electron: true }),
  layer('preload', { electron: true }),
  layer('shared', { inside: ['shared'], node: false }),
  layer('renderer', { inside: ['renderer', 'shared'], node: false }),
  // main/vm-manager is allowed here: the daemon rule (app code reaches it only through its entry
  // points, test/foundation/layers.test.ts) polices those imports.
  layer('main/services', { inside: ['main/services', 'shared', 'main/vm-api', 'main/lib', 'main/vm-manager'] }),
  layer('main/vm-manager', { inside: ['main/vm-manager', 'shared', 'main/vm-api', 'main/lib'] }),
  layer('main/vm-api', { inside: ['main/vm-api', 'shared', 'main/lib'] }),
  layer('main/lib', { inside: ['main/lib', 'shared'] }),
  {
    // An IPC channel is `povdesk:<name>` and is spelled only in shared/contract/wire.ts; the
    // povdesk:// link scheme (main/desktop) is not a channel.
    files: ['{main,preload,renderer,shared}/**/*.{ts,tsx}'],
    ignores: ['shared/contract/wire.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'Literal[value=/^povdesk:[a-z]/i]', message: 'IPC channel names live in shared/contract/wire.ts' },
        { selector: 'TemplateElement[value.raw=/^povdesk:[a-z]/i]', message: 'IPC channel names live in shared/contract/wire.ts' },
      ],
    },
  },
);
