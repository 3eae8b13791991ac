// Foundation figures: host cold start to the first contract answer (against a bare `node -e`
// start in the same run), and the renderer's gzipped bundle beside an empty Vite React page: what
// loads before first paint (target ≤ 1.5×) and all of it (target ≤ 3×). The renderer is built here,
// in memory, with electron-vite's own config (what `npm run build` writes to out/renderer), so a
// guard can read Rollup's module graph: it fails the bench naming each package in the first paint
// that is not one the POVs page needs, and the chain of static imports that brought it in.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import WebSocket from 'ws';
import { build, type Plugin, type Rollup } from 'vite';
import react from '@vitejs/plugin-react';
import { resolveConfig } from 'electron-vite';
import { WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/wire';

const ROOT = join(import.meta.dirname, '..', '..');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function hostColdStart(): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'povdesk-bench-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'out/main/cli.js'), 'serve', '--port', '0'], {
    env: { ...process.env, POVDESK_HOME: home },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      const m = /serving (http:\/\/\S+)#token=(\S+)/.exec(out);
      if (m) resolve(`${m[1]}|${m[2]}`);
    });
    child.once('exit', (c) => reject(new Error(`host exited ${c}`)));
  });
  const [http, token] = url.split('|') as [string, string];
  const ws = new WebSocket(http.replace('http', 'ws') + 'ws', [WS_PROTOCOL, WS_TOKEN_PREFIX + token]);
  await new Promise((r) => ws.once('open', r));
  await new Promise<void>((resolve) => {
    // The host's hello comes first; the answer to the call is the message with id 1.
    ws.on('message', (m) => (JSON.parse(String(m)) as { id?: number }).id === 1 && resolve());
    ws.send(JSON.stringify({ t: 'call', id: 1, method: 'app.info', args: {} }));
  });
  const ms = performance.now() - t0;
  ws.close();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(home, { recursive: true, force: true });
  return ms;
}

function nodeBare(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}

function gzippedAssets(dir: string): number {
  let total = 0;
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    if (/\.(js|css)$/.test(f)) total += gzipSync(readFileSync(join(dir, f)), { level: 9 }).length;
  }
  return total;
}

async function emptyReactPage(): Promise<number> {
  const dir = join(ROOT, 'test', 'fixtures', 'generated', 'empty-react');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="root"></div><script type="module" src="./main.jsx"></script>');
  writeFileSync(
    join(dir, 'main.jsx'),
    "import { createRoot } from 'react-dom/client';\ncreateRoot(document.getElementById('root')).render(<div>empty</div>);\n",
  );
  await build({ root: dir, logLevel: 'silent', plugins: [react()], build: { outDir: join(dir, 'dist'), minify: true } });
  return gzippedAssets(join(dir, 'dist'));
}

/** Targets against an empty Vite React page: before first paint, and the whole bundle. */
const STARTUP_TARGET = 1.5;
const BUNDLE_TARGET = 3;
/**
 * The packages the first paint may hold: React, and what the POVs list draws with. Anything else
 * (xterm, zod, ...) belongs to a page or a dialog that loads when it is opened.
 */
const FIRST_PAINT_PACKAGES = new Set(['react', 'react-dom', 'scheduler', 'zustand', '@tanstack/react-virtual', '@tanstack/virtual-core']);

/** "node_modules/<package>" for a dependency's module, "app" for ours, "vite" for its helpers. */
function partOf(id: string): string {
  const m = /(?:^|.*\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(id);
  if (m) return `node_modules/${m[1]}`;
  return id.startsWith('\0') ? 'vite' : 'app';
}

/**
 * The renderer built as `npm run build` builds it, in memory: each .js/.css file's gzipped size,
 * the files loaded before first paint (what index.html names, and the chunks they import), what
 * they hold by part (gzip shared out by each module's rendered size), and the static import chain
 * from index.html to any module.
 */
async function rendererBuild() {
  const resolved = await resolveConfig({}, 'build', 'production');
  const config = resolved.config!.renderer!;
  const parent = new Map<string, string | null>();
  const graph: Plugin = {
    name: 'povdesk-bench-graph',
    generateBundle() {
      const entries = [...this.getModuleIds()].filter((id) => this.getModuleInfo(id)?.isEntry);
      const queue = [...entries];
      for (const e of entries) parent.set(e, null);
      while (queue.length) {
        const id = queue.shift()!;
        for (const next of this.getModuleInfo(id)?.importedIds ?? [])
          if (!parent.has(next)) {
            parent.set(next, id);
            queue.push(next);
          }
      }
    },
  };
  const out = (await build({
    ...config,
    logLevel: 'silent',
    plugins: [...(config.plugins ?? []), graph],
    build: { ...config.build, write: false },
  })) as Rollup.RollupOutput;
  const gzip = new Map<string, number>();
  for (const o of out.output) {
    if (/\.(js|css)$/.test(o.fileName)) gzip.set(o.fileName, gzipSync(o.type === 'chunk' ? o.code : o.source, { level: 9 }).length);
  }
  const html = String((out.output.find((o) => o.fileName === 'index.html') as Rollup.OutputAsset).source);
  const firstPaint = [...html.matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  const chunks = new Map(out.output.filter((o): o is Rollup.OutputChunk => o.type === 'chunk').map((c) => [c.fileName, c]));
  for (let i = 0; i < firstPaint.length; i++)
    for (const f of chunks.get(firstPaint[i]!)?.imports ?? []) if (!firstPaint.includes(f)) firstPaint.push(f);
  const parts = new Map<string, number>();
  const members = new Map<string, string[]>();
  const appModules: { id: string; bytes: number }[] = [];
  for (const f of firstPaint) {
    const c = chunks.get(f);
    if (!c) continue;
    // each module's share of the file's gzip: by its own code gzipped (compressibility differs a lot)
    const own = new Map(Object.entries(c.modules).map(([id, m]) => [id, m.code ? gzipSync(m.code).length : 0]));
    const sum = [...own.values()].reduce((a, b) => a + b, 0) || 1;
    for (const id of Object.keys(c.modules)) {
      const part = partOf(id);
      const share = (gzip.get(f)! * own.get(id)!) / sum;
      parts.set(part, (parts.get(part) ?? 0) + share);
      members.set(part, [...(members.get(part) ?? []), id]);
      if (part === 'app') appModules.push({ id: relative(ROOT, id), bytes: share });
    }
  }
  appModules.sort((a, b) => b.bytes - a.bytes);
  const chain = (id: string) => {
    const abs = parent.has(id) ? id : join(ROOT, id);
    const path: string[] = [];
    for (let x: string | null | undefined = abs; x; x = parent.get(x)) path.unshift(x.startsWith(ROOT) ? relative(ROOT, x) : x);
    return path;
  };
  /** The module of a part the entry reaches first: where the part came in. */
  const entryOf = (part: string) => members.get(part)!.reduce((a, b) => (chain(b).length < chain(a).length ? b : a));
  return { gzip, firstPaint, parts, appModules, chain, entryOf };
}

const starts: number[] = [];
const bare: number[] = [];
for (let i = 0; i < 5; i++) {
  bare.push(nodeBare());
  starts.push(await hostColdStart());
}
const s = median(starts);
const b = median(bare);
console.log(
  `bench host-cold-start-to-first-answer: ${s.toFixed(0)} ms [ratio ${(s / b).toFixed(1)} vs bare node start ${b.toFixed(0)} ms]`,
);

const empty = await emptyReactPage();
const r = await rendererBuild();
const entry = r.firstPaint.reduce((n, f) => n + r.gzip.get(f)!, 0);
const app = [...r.gzip.values()].reduce((a, b) => a + b, 0);
console.log(
  `bench renderer-startup-gzip: ${(entry / 1024).toFixed(1)} KiB [ratio ${(entry / empty).toFixed(2)} vs empty Vite React page] ` +
    `target ${STARTUP_TARGET} (what loads before first paint: ${r.firstPaint.join(', ')})`,
);
console.log(
  `bench renderer-bundle-gzip: ${(app / 1024).toFixed(1)} KiB [ratio ${(app / empty).toFixed(2)} vs empty Vite React ` +
    `page ${(empty / 1024).toFixed(1)} KiB] target ${BUNDLE_TARGET}`,
);
const parts = [...r.parts].sort((a, b) => b[1] - a[1]);
console.log(
  `bench renderer-startup-contents: ${parts.map(([k, v]) => `${k} ${(v / 1024).toFixed(1)}`).join(', ')} (KiB gzip, the file's ` +
    `shared out by each module's own code gzipped)`,
);
const strangers = parts.filter(([k]) => k.startsWith('node_modules/') && !FIRST_PAINT_PACKAGES.has(k.slice('node_modules/'.length)));
for (const [k, v] of strangers) {
  const chain = r.chain(r.entryOf(k));
  const into = chain.slice(0, chain.findIndex((id) => partOf(id) === k) + 1); // up to the package's first module
  console.log(
    `bench renderer-startup-guard: ${k.slice('node_modules/'.length)} (${(v / 1024).toFixed(1)} KiB gzip) is in the first paint, ` +
      `imported through ${into.join(' -> ')}`,
  );
}
if (strangers.length) {
  console.log(
    'bench renderer-startup-guard: FAILED: load it behind a dynamic import (React.lazy), or add it to FIRST_PAINT_PACKAGES in ' +
      'this file with the reason the POVs page needs it',
  );
  process.exitCode = 1;
} else if (entry / empty > STARTUP_TARGET) {
  const big = r.appModules.slice(0, 5);
  console.log(
    `bench renderer-startup-guard: FAILED: over ${STARTUP_TARGET}×; the largest app modules in it: ` +
      big.map((m) => `${m.id} (${(m.bytes / 1024).toFixed(1)} KiB, through ${r.chain(m.id).slice(-3, -1).join(' -> ')})`).join('; '),
  );
  process.exitCode = 1;
} else {
  console.log(`bench renderer-startup-guard: ok (first paint holds only ${[...FIRST_PAINT_PACKAGES].join(', ')} and app code)`);
}
