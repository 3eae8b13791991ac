// Profiling aid, not a bench (the runner skips files starting with _): <MB> of 'a's through the
// app's terminal for each build directory given (a copy of `out/`, so old and new builds alternate
// in one sitting), with a bare 130x24 xterm in the same Chromium before and after. Prints MB/s, CPU
// seconds per 100 MB by process (test/bench/_cpu.ts: the renderer's main thread apart, host, sshd), and with
// mode 1 a Chromium trace summary of the renderer's main thread (busy share, what ended each idle
// gap), with mode 2 a JS sampling profile. PROF_HOST=<dir> also writes the host's --cpu-prof there.
// The fetch hook counts chunks only when the page reads the body itself (no worker).
// usage: node --import tsx test/bench/_profile-ssh-ui.ts <MB> <0|1|2> <outdir>...
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from '@playwright/test';
import { connectInApp, MB, sshdWithData } from './_ssh-fixture';
import { cpuSince, cpuSnapshot, describeCpu, type CpuUse } from './_cpu';

const [mb, trace, ...outs] = process.argv.slice(2);
const SIZE = Number(mb) * MB;
const tracing = trace === '1';
const jsprof = trace === '2';

async function host(out: string) {
  const prof = process.env.PROF_HOST
    ? ['--import', "data:text/javascript,process.on('SIGUSR2',()=>process.exit(0))", '--cpu-prof', '--cpu-prof-dir', process.env.PROF_HOST]
    : [];
  const child = spawn(process.execPath, [...prof, join(out, 'main', 'cli.js'), 'serve', '--port', '0'], {
    env: { ...process.env, POVDESK_HOME: mkdtempSync(join(tmpdir(), 'pp-')) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((r) => {
    let o = '';
    child.stdout.on('data', (b) => {
      o += b;
      const m = /serving (http:\/\/\S+)/.exec(o);
      if (m) r(m[1]!);
    });
  });
  return { child, url };
}

function summarize(buf: Buffer, label: string) {
  const events = (JSON.parse(buf.toString()) as { traceEvents: any[] }).traceEvents;
  const names = new Map<string, string>();
  for (const e of events) if (e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
  const mains = [...names].filter(([, n]) => n === 'CrRendererMain').map(([k]) => k);
  for (const k of mains) {
    const evs = events.filter((e) => `${e.pid}:${e.tid}` === k && e.ph === 'X' && e.dur);
    if (evs.length < 50) continue;
    evs.sort((a, b) => a.ts - b.ts);
    // top-level: not nested in a previous event
    const top: any[] = [];
    let end = 0;
    const byName = new Map<string, number>();
    for (const e of evs) {
      byName.set(e.name, (byName.get(e.name) ?? 0) + e.dur);
      if (e.ts >= end) {
        top.push(e);
        end = e.ts + e.dur;
      }
    }
    // What ended each idle gap: the names of the events inside the task that followed it.
    const gapBy = new Map<string, [number, number]>();
    for (let i = 1; i < top.length; i++) {
      const gap = top[i].ts - (top[i - 1].ts + top[i - 1].dur);
      if (gap < 500) continue;
      const inner = evs.filter((e) => e.ts >= top[i].ts && e.ts < top[i].ts + top[i].dur && e !== top[i]).map((e) => e.name);
      const k = inner.includes('TimerFire')
        ? 'TimerFire'
        : inner.includes('FireAnimationFrame') || inner.includes('BeginMainFrame') || inner.includes('WebFrameWidgetImpl::BeginMainFrame')
          ? 'frame'
          : inner.includes('RunMicrotasks')
            ? 'microtasks(data?)'
            : inner.slice(0, 3).join('>') || 'bare RunTask';
      const [n, d] = gapBy.get(k) ?? [0, 0];
      gapBy.set(k, [n + 1, d + gap]);
    }
    for (const [k, [n, d]] of [...gapBy].sort((a, b) => b[1][1] - a[1][1]).slice(0, 8))
      console.log(`   idle ${(d / 1000).toFixed(0).padStart(5)} ms in ${n} gaps ended by ${k}`);
    const span = (evs.at(-1).ts + evs.at(-1).dur - evs[0].ts) / 1000;
    const busy = top.reduce((n, e) => n + e.dur, 0) / 1000;
    console.log(
      `${label} main thread ${k}: span ${span.toFixed(0)} ms, busy ${busy.toFixed(0)} ms (${((busy / span) * 100).toFixed(0)} %)`,
    );
    const rows = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 22);
    for (const [n, d] of rows) console.log(`   ${(d / 1000).toFixed(0).padStart(6)} ms  ${n}`);
  }
}

function jsSummary(p: any, label: string) {
  const byId = new Map<number, any>(p.nodes.map((n: any) => [n.id, n]));
  const self = new Map<string, number>();
  const dt: number[] = p.timeDeltas;
  p.samples.forEach((id: number, i: number) => {
    const c = byId.get(id).callFrame;
    const k = `${c.functionName || '(anon)'} ${String(c.url).split('/').pop()}:${c.lineNumber}`;
    self.set(k, (self.get(k) ?? 0) + (dt[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`${label} JS profile ${(total / 1000).toFixed(0)} ms`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`   ${(v / 1000).toFixed(1).padStart(7)} ms  ${k}`);
}

/** CPU seconds per 100 MB by process (test/bench/_cpu.ts), and the renderer's main thread's share of the wall time. */
function cpuReport(used: CpuUse, mb: number, wall: number): string {
  return `${describeCpu(used, mb)}; main thread busy ${((used.rendererMain / wall) * 100).toFixed(0)} % of wall`;
}

async function appRun(browser: Browser, out: string, sshd: Awaited<ReturnType<typeof sshdWithData>>) {
  const h = await host(out);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(`(() => {
    const log = (window.__chunks = []);
    const orig = window.fetch;
    window.fetch = async (...a) => {
      const res = await orig(...a);
      if (!String(a[0]).includes('/bytes') || !res.body) return res;
      const ts = new TransformStream({ transform(c, ctl) { log.push(performance.now(), c.length); ctl.enqueue(c); } });
      return new Response(res.body.pipeThrough(ts), { status: res.status, headers: res.headers });
    };
  })()`);
  try {
    const rows = await connectInApp(page, h.url, sshd);
    if (tracing)
      await browser.startTracing(page, {
        categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink', 'toplevel', 'loading'],
      });
    const cdp = jsprof ? await page.context().newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
    }
    const before = cpuSnapshot(h.child.pid!, sshd.sshd.pid);
    const t = Date.now();
    await page.keyboard.type(`cat ${sshd.data}; echo; echo END-$((40+2))\n`);
    await rows.getByText('END-42').first().waitFor({ timeout: 600_000 });
    const secs = (Date.now() - t) / 1000;
    console.log(`${out}: ${cpuReport(cpuSince(before, cpuSnapshot(h.child.pid!, sshd.sshd.pid)), SIZE / MB, secs)}`);
    const log = (await page.evaluate('window.__chunks')) as number[];
    const sizes: number[] = [];
    const gaps: number[] = [];
    for (let i = 0; i < log.length; i += 2) {
      sizes.push(log[i + 1]!);
      if (i) gaps.push(log[i]! - log[i - 2]!);
    }
    sizes.sort((a, b) => a - b);
    gaps.sort((a, b) => a - b);
    const q = (xs: number[], f: number) => xs[Math.floor((xs.length - 1) * f)] ?? 0;
    console.log(
      `chunks ${sizes.length}: size p10/p50/p90 ${q(sizes, 0.1)}/${q(sizes, 0.5)}/${q(sizes, 0.9)}; gaps ms ` +
        `p50/p90/p99/max ${q(gaps, 0.5).toFixed(1)}/${q(gaps, 0.9).toFixed(1)}/${q(gaps, 0.99).toFixed(1)}/${q(gaps, 1).toFixed(1)}; ` +
        `gaps>20ms total ${gaps
          .filter((g) => g > 20)
          .reduce((a, b) => a + b, 0)
          .toFixed(0)} ms of ${(secs * 1000).toFixed(0)}`,
    );
    if (tracing) summarize(await browser.stopTracing(), `app ${out}`);
    if (cdp) jsSummary((await cdp.send('Profiler.stop')).profile, `app ${out}`);
    return SIZE / MB / secs;
  } finally {
    await page.close();
    h.child.kill(process.env.PROF_HOST ? 'SIGUSR2' : 'SIGTERM');
  }
}

async function bare(browser: Browser): Promise<number> {
  const page: Page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await page.setContent('<div id="t" style="width:1200px;height:860px"></div>');
    const lib = join(process.cwd(), 'node_modules', '@xterm', 'xterm');
    await page.addStyleTag({ path: join(lib, 'css', 'xterm.css') });
    await page.addScriptTag({ path: join(lib, 'lib', 'xterm.js') });
    if (tracing)
      await browser.startTracing(page, {
        categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink', 'toplevel'],
      });
    const before = cpuSnapshot(null, null);
    const cdp = jsprof ? await page.context().newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
    }
    const ms = (await page.evaluate(
      `new Promise((resolve) => {
      const term = new Terminal({ cols: 130, rows: 24, scrollback: 10000, fontSize: 13, ` +
        `fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace" });
      term.open(document.getElementById('t'));
      const chunk = new Uint8Array(256 * 1024).fill(97);
      const total = ${SIZE};
      const t0 = performance.now();
      let sent = 0, inflight = 0;
      const pump = () => { while (inflight < 2 && sent < total) { inflight++; sent += chunk.length; term.write(chunk, () => ` +
        `{ inflight--; if (sent >= total && inflight === 0) resolve(performance.now() - t0); else pump(); }); } };
      pump();
    })`,
    )) as number;
    console.log(`bare: ${cpuReport(cpuSince(before, cpuSnapshot(null, null)), SIZE / MB, ms / 1000)}`);
    if (tracing) summarize(await browser.stopTracing(), 'bare');
    if (cdp) jsSummary((await cdp.send('Profiler.stop')).profile, 'bare');
    return SIZE / MB / (ms / 1000);
  } finally {
    await page.close();
  }
}

const sshd = await sshdWithData(SIZE);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const res: string[] = [];
  const b = await bare(browser);
  for (const o of outs) res.push(`${o}: ${(await appRun(browser, o, sshd)).toFixed(1)} MB/s`);
  const b2 = await bare(browser);
  console.log(`bare xterm ${b.toFixed(1)} / ${b2.toFixed(1)} MB/s`);
  for (const r of res) console.log(r);
} finally {
  await browser.close();
  await sshd.sshd.dispose();
}
