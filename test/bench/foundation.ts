// Foundation figures: host cold start to the first contract answer (against a bare `node -e`
// start in the same run), and the renderer's gzipped bundle beside an empty Vite React page.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import WebSocket from 'ws';
import { build } from 'vite';
import react from '@vitejs/plugin-react';
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

const starts: number[] = [];
const bare: number[] = [];
for (let i = 0; i < 5; i++) {
  bare.push(nodeBare());
  starts.push(await hostColdStart());
}
const s = median(starts);
const b = median(bare);
console.log(`bench host-cold-start-to-first-answer: ${s.toFixed(0)} ms [ratio ${(s / b).toFixed(1)} vs bare node start ${b.toFixed(0)} ms]`);

const app = gzippedAssets(join(ROOT, 'out', 'renderer'));
const html = readFileSync(join(ROOT, 'out', 'renderer', 'index.html'), 'utf8');
const entry = [...html.matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+\.(?:js|css))"/g)].reduce(
  (n, m) => n + gzipSync(readFileSync(join(ROOT, 'out', 'renderer', m[1]!)), { level: 9 }).length,
  0,
);
const empty = await emptyReactPage();
console.log(
  `bench renderer-startup-gzip: ${(entry / 1024).toFixed(1)} KiB [ratio ${(entry / empty).toFixed(2)} vs empty Vite React page] (what loads before first paint)`,
);
console.log(
  `bench renderer-bundle-gzip: ${(app / 1024).toFixed(1)} KiB [ratio ${(app / empty).toFixed(2)} vs empty Vite React page ${(empty / 1024).toFixed(1)} KiB]`,
);
