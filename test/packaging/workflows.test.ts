/**
 * The GitHub workflows cannot run here, so they are linted: strict YAML (no duplicate keys), the
 * shape GitHub Actions accepts for what we use, expressions that name only existing matrix keys and
 * known contexts, and every repository file, npm script and Playwright project they name exists.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { ROOT } from './pack';

const step = z
  .object({
    name: z.string().optional(),
    id: z.string().optional(),
    if: z.string().optional(),
    uses: z
      .string()
      .regex(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/, 'an action pinned to a commit SHA')
      .optional(),
    run: z.string().min(1).optional(),
    shell: z.enum(['bash', 'pwsh', 'sh']).optional(),
    with: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    env: z.record(z.string(), z.string()).optional(),
    'timeout-minutes': z.number().optional(),
  })
  .strict()
  .refine((s) => (s.uses === undefined) !== (s.run === undefined), 'a step has exactly one of uses and run');

const job = z
  .object({
    'runs-on': z.string(),
    needs: z.union([z.string(), z.array(z.string())]).optional(),
    if: z.string().optional(),
    environment: z.string().optional(),
    permissions: z.record(z.string(), z.enum(['read', 'write', 'none'])).optional(),
    strategy: z
      .object({
        'fail-fast': z.boolean().optional(),
        matrix: z.object({ include: z.array(z.record(z.string(), z.string())).min(1) }).strict(),
      })
      .strict()
      .optional(),
    container: z.union([z.string(), z.object({ image: z.string(), options: z.string().optional() }).strict()]).optional(),
    'timeout-minutes': z.number().int().positive().optional(),
    env: z.record(z.string(), z.string()).optional(),
    defaults: z
      .object({ run: z.object({ shell: z.enum(['bash', 'pwsh', 'sh']) }).strict() })
      .strict()
      .optional(),
    steps: z.array(step).min(1),
  })
  .strict();

const workflow = z
  .object({
    name: z.string(),
    on: z.record(z.string(), z.unknown()),
    permissions: z.record(z.string(), z.enum(['read', 'write', 'none'])),
    concurrency: z.object({ group: z.string(), 'cancel-in-progress': z.boolean() }).strict().optional(),
    jobs: z.record(z.string().regex(/^[a-z][\w-]*$/), job),
  })
  .strict();
type Workflow = z.infer<typeof workflow>;

const CONTEXTS = new Set(['github', 'env', 'matrix', 'secrets', 'steps', 'needs', 'runner', 'inputs', 'job', 'strategy']);
const FUNCTIONS = new Set([
  'startsWith',
  'endsWith',
  'contains',
  'format',
  'join',
  'toJSON',
  'fromJSON',
  'hashFiles',
  'success',
  'failure',
  'always',
  'cancelled',
]);
/** Files other branches add (merged by the lead): referenced here, not yet in this tree. */
const FROM_OTHER_BRANCHES = new Set(['scripts/native-abi.mjs']);

function load(file: string): Workflow {
  const doc = parseDocument(readFileSync(join(ROOT, '.github', 'workflows', file), 'utf8'), {
    uniqueKeys: true,
    strict: true,
    prettyErrors: true,
  });
  expect(
    doc.errors.map((e) => e.message),
    `${file}: YAML errors`,
  ).toEqual([]);
  return workflow.parse(doc.toJS());
}

/** Every string value in a parsed YAML tree. */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v && typeof v === 'object') return Object.values(v).flatMap(strings);
  return [];
}

/** Every problem with the expressions of one job: unknown contexts or functions, matrix keys not in every include entry. */
function expressionProblems(name: string, j: z.infer<typeof job>): string[] {
  const problems: string[] = [];
  const keys = j.strategy ? j.strategy.matrix.include.map((e) => new Set(Object.keys(e))) : [];
  const exprs = [j.if, ...j.steps.map((s) => s.if)].filter((x): x is string => !!x);
  for (const text of strings(j)) {
    exprs.push(...[...text.matchAll(/\$\{\{(.*?)\}\}/g)].map((m) => m[1]!));
    if ((text.match(/\$\{\{/g) ?? []).length !== (text.match(/\$\{\{.*?\}\}/g) ?? []).length)
      problems.push(`${name}: an unclosed \${{ in "${text.slice(0, 60)}"`);
  }
  for (const e of exprs) {
    const bare = e.replace(/'[^']*'/g, "''");
    for (const m of bare.matchAll(/\b([A-Za-z_][\w-]*)(\s*\()?/g)) {
      const [, id, call] = m;
      const before = bare[m.index! - 1];
      if (before === '.' || ['true', 'false', 'null'].includes(id!)) continue;
      if (call) {
        if (!FUNCTIONS.has(id!)) problems.push(`${name}: unknown function ${id} in "${e}"`);
      } else if (!CONTEXTS.has(id!)) problems.push(`${name}: unknown context ${id} in "${e}"`);
    }
    for (const m of bare.matchAll(/\bmatrix\.([\w-]+)/g)) {
      if (!j.strategy) problems.push(`${name}: matrix.${m[1]} without a matrix`);
      else if (!keys.every((k) => k.has(m[1]!))) problems.push(`${name}: matrix.${m[1]} is not in every include entry`);
    }
  }
  return problems;
}

/** Repository paths, npm scripts and Playwright projects a workflow's run steps name. */
function referenceProblems(w: Workflow): string[] {
  const problems: string[] = [];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const playwright = readFileSync(join(ROOT, 'playwright.config.ts'), 'utf8');
  for (const j of Object.values(w.jobs)) {
    for (const s of j.steps) {
      const run = s.run ?? '';
      for (const [path] of run.matchAll(/\b(?:scripts|resources|test)\/[\w./-]+\w/g)) {
        if (!existsSync(join(ROOT, path)) && !FROM_OTHER_BRANCHES.has(path)) problems.push(`${path} does not exist`);
      }
      for (const [, script] of run.matchAll(/\bnpm (?:run )?(test|start|[\w:-]+(?=\s|$))/gm)) {
        if (script !== 'ci' && script !== 'install' && !(script! in pkg.scripts)) problems.push(`npm script ${script} does not exist`);
      }
      for (const [, project] of run.matchAll(/--project[= ]([\w-]+)/g)) {
        if (!playwright.includes(`name: '${project}'`) && !['node', 'renderer', 'keyring'].includes(project!))
          problems.push(`no test project ${project}`);
      }
    }
    for (const need of [j.needs ?? []].flat()) if (!(need in w.jobs)) problems.push(`needs ${need}, which is not a job`);
  }
  return problems;
}

const runs = (w: Workflow) =>
  Object.values(w.jobs)
    .flatMap((j) => j.steps.map((s) => s.run ?? ''))
    .join('\n');

describe('.github/workflows', () => {
  it('holds exactly the test and release workflows, each well formed with no dangling reference', () => {
    expect(readdirSync(join(ROOT, '.github', 'workflows')).sort()).toEqual(['release.yml', 'test.yml']);
    for (const file of ['release.yml', 'test.yml']) {
      const w = load(file);
      const problems = [...Object.entries(w.jobs).flatMap(([n, j]) => expressionProblems(n, j)), ...referenceProblems(w)];
      expect(problems, file).toEqual([]);
    }
  });

  it('the lint catches what it claims to: a duplicate key, a step with both uses and run, an unknown matrix key, a missing script', () => {
    const dup = parseDocument('a: 1\na: 2\n', { uniqueKeys: true });
    expect(dup.errors.length).toBeGreaterThan(0);
    const base = load('release.yml');
    const pkgJob = base.jobs.package!;
    expect(() =>
      job.parse({ ...pkgJob, steps: [{ uses: 'actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683', run: 'ls' }] }),
    ).toThrow(/exactly one of uses and run/);
    expect(() => job.parse({ ...pkgJob, steps: [{ uses: 'actions/checkout@v4' }] })).toThrow(/pinned to a commit SHA/);
    const bad = { ...pkgJob, steps: [...pkgJob.steps, { name: 'x', run: 'echo ${{ matrix.nope }} ${{ secret.X }}' }] };
    expect(expressionProblems('package', bad)).toEqual([
      'package: matrix.nope is not in every include entry',
      'package: unknown context secret in " secret.X "',
    ]);
    expect(expressionProblems('package', { ...pkgJob, steps: [{ run: 'echo ${{ matrix.os' }] })).toEqual([
      'package: an unclosed ${{ in "echo ${{ matrix.os"',
    ]);
    const missing = {
      ...base,
      jobs: {
        ...base.jobs,
        extra: {
          ...pkgJob,
          needs: 'nobody',
          steps: [{ run: 'node scripts/nope.mjs && npm run nope && npx playwright test --project=nope' }],
        },
      },
    };
    expect(referenceProblems(missing)).toEqual([
      'scripts/nope.mjs does not exist',
      'npm script nope does not exist',
      'no test project nope',
      'needs nobody, which is not a job',
    ]);
  });

  it('the test workflow runs README’s test command on every push, on Debian 12', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const command = /^(npm test)\b/m.exec(readme)?.[1];
    expect(command).toBe('npm test');
    const w = load('test.yml');
    expect(Object.keys(w.on).sort()).toEqual(['pull_request', 'push']);
    expect(runs(w).split('\n')).toContain(command);
    expect(w.jobs.test!.container).toMatchObject({ image: 'debian:12' });
  });

  it('the release workflow builds each platform on its own runner and attaches installers with checksums to the tag', () => {
    const w = load('release.yml');
    expect(w.on.push).toEqual({ tags: ['v*'] });
    const pkgJob = w.jobs.package!;
    const include = pkgJob.strategy!.matrix.include;
    expect(include.map((e) => [e.platform, e.os!.split('-')[0]])).toEqual([
      ['linux', 'ubuntu'],
      ['mac', 'macos'],
      ['win', 'windows'],
    ]);
    expect(include.find((e) => e.platform === 'mac')!.builder).toMatch(/--mac dmg zip --x64 --arm64/);
    expect(include.find((e) => e.platform === 'linux')!.builder).toMatch(/--linux AppImage deb/);
    expect(include.find((e) => e.platform === 'win')!.builder).toMatch(/--win nsis/);
    const text = runs(w);
    expect(text).toMatch(/xvfb-run --auto-servernum .* npx playwright test --project=electron/);
    expect(text).toContain('node scripts/native-abi.mjs dist --expect 150');
    expect(text).toContain('npx electron-builder ${{ matrix.builder }} --publish never');
    expect(text).toMatch(/SHA256SUMS/);
    const upload = pkgJob.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
    for (const ext of ['AppImage', 'deb', 'dmg', 'zip', 'exe', 'blockmap']) expect(String(upload.with!.path)).toContain(`dist/*.${ext}`);
    expect(String(upload.with!.path)).toContain('dist/latest*.yml'); // electron-updater's feed
    expect(w.permissions).toEqual({ contents: 'read' });
    expect(w.jobs.release).toMatchObject({ needs: 'package', permissions: { contents: 'write' } });
    expect(runs({ ...w, jobs: { release: w.jobs.release! } })).toMatch(
      /gh release create "\$GITHUB_REF_NAME" artifacts\/\* .*--verify-tag/,
    );
  });
});
