// bench ssh-ui: 100 MB from a real sshd into the renderer's xterm in Chromium (browser mode: the
// built host, its HTTP byte stream + WebSocket, TerminalsPage), against OpenSSH `ssh -tt host cat file > /dev/null` in
// the same run and a bare xterm of the same size in the same Chromium, in up to 5 interleaved rounds.
// Prints MB/s, the ratios (targets: median ≥ 0.6 of ssh -tt with none below 0.5; ≥ 0.9 of bare
// xterm), the host process's peak RSS growth, and what was still rendered after Ctrl-C.
// Needs the built app (`npm run build`) with the ssh domain wired in; says so and skips otherwise.
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from '@playwright/test';
import { needs } from '../support/system';
import { CLI, startHostProcess, stopHostProcess } from '../e2e/host-process';
import { rssKb } from '../ssh/sshd';
import { DEFAULT_HIGH_WATER, PICTURE_AHEAD, PICTURE_MS } from '../../main/services/ssh/session';
import { connectInApp, MB, sshdWithData } from './_ssh-fixture';
import { cpuSince, cpuSnapshot, describeCpu, leastWall, type CpuSnapshot, type CpuUse } from './_cpu';
import { cpus } from 'node:os';

const SIZE = 100 * MB;
/** Rounds of the throughput comparison; POVDESK_SSH_UI_ROUNDS=0 measures only Ctrl-C (for A/B runs). */
const ROUNDS = Number(process.env.POVDESK_SSH_UI_ROUNDS ?? 5);
/** Ctrl-C is measured this many times (POVDESK_SSH_UI_CTRL_C_TRIALS); the worst is the figure held to the target. */
const CTRL_C_TRIALS = Number(process.env.POVDESK_SSH_UI_CTRL_C_TRIALS ?? 3);
const CTRL_C_RESERVE_MS = 40_000;
const LINE_BYTES = 100;
const LINES = 1_000_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function main() {
  const missing = needs(['/usr/sbin/sshd', 'ssh', CHROMIUM]);
  if (missing) return console.log(`bench ssh-ui: skipped (${missing})`);
  if (!existsSync(CLI) || !/'ssh\.open'|"ssh\.open"/.test(readFileSync(CLI, 'utf8') + readAll(join(CLI, '..', 'chunks')))) {
    return console.log('bench ssh-ui: skipped (the built app has no ssh.open; run `npm run build` after wiring the ssh domain)');
  }
  const { sshd, key, data, openssh, opensshSetupMs } = await sshdWithData(SIZE);
  const lines = join(sshd.dir, 'lines.txt');
  writeLines(lines);
  const home = mkdtempSync(join(tmpdir(), 'povdesk-bench-'));
  const host = await startHostProcess({ ...process.env, POVDESK_HOME: home });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const rows = await connectInApp(page, host.openUrl, { sshd, key });
    await page.keyboard.type('echo SZ-$(stty size | tr " " x)-END\n');
    const [termRows, termCols] = (await rows
      .getByText(/SZ-\d+x\d+-END/)
      .first()
      .textContent())!
      .match(/SZ-(\d+)x(\d+)/)!
      .slice(1)
      .map(Number);
    // What draws the app's terminal (issue 16): with --disable-gpu this Chromium's WebGL is software,
    // so the app keeps xterm's DOM renderer, the one the bare xterm below uses and this bench reads.
    const host0 = page.locator('.term-box .term-host');
    console.log(`bench ssh-ui-renderer: ${await host0.getAttribute('data-renderer')} (${await host0.getAttribute('data-renderer-why')})`);
    const pid = host.child.pid!;
    const base = rssKb(pid);
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 50);

    // Rounds of (OpenSSH -tt, the app, bare xterm), so load from elsewhere falls on all three; as
    // many as fit the runner's budget (up to 5), leaving room for the Ctrl-C figure.
    const budgetMs = Number(process.env.POVDESK_BENCH_BUDGET_MS ?? 300_000);
    const rounds: { pty: number; noPty: number; ours: number; alone: number; oursCpu: CpuUse; aloneCpu: CpuUse }[] = [];
    let slowest = 0;
    // CPU seconds by process around each transfer (test/bench/_cpu.ts): what the cores had to give
    const snap = () => cpuSnapshot(pid, sshd.pid);
    for (let i = 0; i < ROUNDS && (i === 0 || performance.now() + slowest * 1.2 + CTRL_C_RESERVE_MS < budgetMs); i++) {
      const r0 = performance.now();
      // OpenSSH's figure is the transfer: its connection set-up (`ssh -tt host true`, measured
      // beside it) is taken off, as the app's session is already open when its clock starts.
      const setupMs = await opensshSetupMs(true);
      const pty = SIZE / MB / (SIZE / MB / (await openssh(true)) - setupMs / 1000);
      // The issue's literal baseline is `ssh host cat` with no terminal at all; a terminal needs a
      // pty, so the target ratio is taken against -tt, and this one is printed for the record.
      const noPty = i === 0 ? await openssh(false) : NaN;
      const c0 = snap();
      const ours = SIZE / MB / ((await timedInPage(page, `clear; cat ${data}; echo; echo END-$((40+${i}))`, `END-${40 + i}`)) / 1000);
      const oursCpu = cpuSince(c0, snap());
      const { mbs: alone, cpu: aloneCpu } = await xtermAlone(browser, termCols!, termRows!, snap);
      rounds.push({ pty, noPty, ours, alone, oursCpu, aloneCpu });
      console.log(
        `bench ssh-ui round ${i + 1}: app ${ours.toFixed(1)} MB/s, ssh -tt ${pty.toFixed(1)} (set-up ${setupMs} ms taken off), ` +
          `bare xterm ${alone.toFixed(1)}: ratios ${(ours / pty).toFixed(2)} / ${(ours / alone).toFixed(2)}`,
      );
      slowest = Math.max(slowest, performance.now() - r0);
    }
    clearInterval(sampler);
    if (rounds.length) {
      const vsPty = rounds.map((r) => r.ours / r.pty);
      const vsAlone = rounds.map((r) => r.ours / r.alone);
      console.log(`bench ssh-ui-openssh-pty: ${median(rounds.map((r) => r.pty)).toFixed(1)} MB/s`);
      console.log(`bench ssh-ui-openssh-nopty: ${rounds[0]!.noPty.toFixed(1)} MB/s`);
      console.log(
        `bench ssh-ui-xterm: ${median(rounds.map((r) => r.ours)).toFixed(1)} MB/s ratio ${median(vsPty).toFixed(2)} target 0.6 ` +
          `(median of ${rounds.length}; lowest ${Math.min(...vsPty).toFixed(2)}, target none below 0.5)`,
      );
      console.log(`bench ssh-ui-xterm-vs-nopty: ratio ${(rounds[0]!.ours / rounds[0]!.noPty).toFixed(2)}`);
      console.log(
        `bench ssh-ui-xterm-alone: ${median(rounds.map((r) => r.alone)).toFixed(1)} MB/s (the same 100 MB written into a bare ` +
          `xterm of the same size, ${termCols}x${termRows}, in the same Chromium: the renderer's ceiling) ratio ` +
          `ours/alone ${median(vsAlone).toFixed(2)} target 0.9 (rounds ${vsAlone.map((x) => x.toFixed(2)).join('/')})`,
      );
      // The two targets are one only where OpenSSH runs at most 1.5x the bare xterm (0.9 / 0.6);
      // above 1.0 here, 0.6 of `ssh -tt` is faster than xterm alone renders in this Chromium.
      const needs = rounds.map((r) => (0.6 * r.pty) / r.alone);
      console.log(
        `bench ssh-ui-targets: 0.6 of ssh -tt needs ${median(needs).toFixed(2)} of the bare xterm's speed (median; ` +
          `rounds ${needs.map((x) => x.toFixed(2)).join('/')}; above 1.00 no terminal in this Chromium reaches it)`,
      );
      // Where the CPU went (the median round by the app's ratio to bare xterm), and what it allows:
      // the bare xterm has the machine's cores to itself, the app shares them with sshd, the host
      // and Chromium's network path, so its least possible time is bounded by all its CPU seconds.
      const mid = [...rounds].sort((a, b) => a.ours / a.alone - b.ours / b.alone)[Math.floor(rounds.length / 2)]!;
      const cores = cpus().length;
      const least = (leastWall(mid.oursCpu, cores) / (SIZE / MB)) * 100;
      const bareWall = 100 / mid.alone;
      console.log(`bench ssh-ui-cpu-app: ${describeCpu(mid.oursCpu, SIZE / MB)}`);
      console.log(`bench ssh-ui-cpu-bare-xterm: ${describeCpu(mid.aloneCpu, SIZE / MB)}`);
      console.log(
        `bench ssh-ui-cpu-ceiling: on ${cores} cores the app's CPU allows at best ${least.toFixed(2)} s per 100 MB (every core ` +
          `busy, no waiting), the bare xterm took ${bareWall.toFixed(2)} s: at most ${(bareWall / least).toFixed(2)} of bare xterm ` +
          `in that round (measured ${(mid.ours / mid.alone).toFixed(2)})`,
      );
    }
    // and what is still held once the output has stopped (the copy's buffer stays; the rest is heap)
    await new Promise((r) => setTimeout(r, 3000));
    console.log(
      `bench ssh-ui-host-peak-rss-growth: ${((peak - base) / 1024).toFixed(1)} MB (3 s after the last ` +
        `transfer: ${((rssKb(pid) - base) / 1024).toFixed(1)} MB)`,
    );
    // A slower renderer keeps the whole pipeline full, the worst case for Ctrl-C: for A/B runs
    // POVDESK_SSH_UI_CTRL_C_THROTTLE=4 slows the page's CPU fourfold (CDP) for the Ctrl-C trials.
    const throttle = Number(process.env.POVDESK_SSH_UI_CTRL_C_THROTTLE ?? 1);
    if (throttle > 1) await (await page.context().newCDPSession(page)).send('Emulation.setCPUThrottlingRate', { rate: throttle });
    const trials: { after: number; ms: number }[] = [];
    for (let i = 0; i < CTRL_C_TRIALS && (i === 0 || performance.now() + 15_000 < budgetMs); i++) trials.push(await ctrlC(page, lines, i));
    const worst = trials.reduce((a, b) => (b.after > a.after ? b : a));
    console.log(
      `bench ssh-ui-ctrl-c: ${(worst.after / MB).toFixed(2)} MB rendered after Ctrl-C, the worst of ${trials.length} ` +
        `(target ≤ 4 MB; trials ${trials.map((t) => (t.after / MB).toFixed(2)).join('/')} MB), prompt back ` +
        `in ${trials.map((t) => t.ms).join('/')} ms${throttle > 1 ? `, page CPU throttled ${throttle}x` : ''} (a ` +
        `window ${(DEFAULT_HIGH_WATER / MB).toFixed(2)} MB behind is sent pictures of the screen, one at a time, ${PICTURE_MS} ms ` +
        `apart at the soonest, the output at most ${(PICTURE_AHEAD / MB).toFixed(2)} MB past the last it parsed; docs/ssh.md ` +
        `"Catch-up")`,
    );
  } finally {
    await browser.close();
    await stopHostProcess(host);
    await sshd.dispose();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * Milliseconds from the Enter that runs `command` (typed before the clock starts) until `marker`
 * is rendered, both taken in the page. Typing the command (a CDP round trip and an ssh.input per
 * key) and Playwright's polling (every 500 ms once a wait is long) used to be inside the app's
 * figure, so it carried up to ~0.5 s that the bare xterm's in-page clock does not.
 */
async function timedInPage(page: Page, command: string, marker: string): Promise<number> {
  await page.keyboard.type(command);
  // A string, not a function: tsx's transform would add helpers the page does not have.
  // The promise is kept in the page, not returned (evaluate would wait for it before the Enter).
  await page.evaluate(`void (window.__benchDone = new Promise((resolve) => {
    const rows = document.querySelector('.term-box .xterm-rows');
    let t0 = 0;
    const onKey = (e) => { if (e.key === 'Enter') { t0 = performance.now(); document.removeEventListener('keydown', onKey, true); } };
    document.addEventListener('keydown', onKey, true);
    const mo = new MutationObserver(() => {
      if (t0 && rows.textContent.includes(${JSON.stringify(marker)})) { mo.disconnect(); resolve(performance.now() - t0); }
    });
    mo.observe(rows, { childList: true, subtree: true, characterData: true });
  }))`);
  await page.keyboard.press('Enter');
  return (await page.evaluate('window.__benchDone', undefined)) as number;
}

/**
 * Ctrl-C during a flood of numbered lines: how much was still rendered after the key (what was in
 * flight: the unacknowledged window, the host's and OpenSSH's buffers) and how long until the
 * shell answered again.
 */
async function ctrlC(page: Page, file: string, trial: number): Promise<{ after: number; ms: number }> {
  const rows = page.locator('.term-box .xterm-rows');
  // The screen cleared first, so the wait below cannot match the previous trial's lines.
  // A marker, not "no numbered line visible": that also matched a screen between two pictures.
  await page.keyboard.type(`clear; echo CLEARED-$((5+${trial}))\n`);
  await rows
    .getByText(`CLEARED-${5 + trial}`)
    .first()
    .waitFor({ timeout: 30_000 });
  await rows
    .getByText(/L\d{9}/)
    .first()
    .waitFor({ state: 'detached', timeout: 30_000 });
  await page.keyboard.type(`cat ${file}\n`);
  await rows
    .getByText(/L000[1-9]\d{5}/)
    .first()
    .waitFor({ timeout: 120_000 }); // 10 MB into the flood
  const lastLine = async () => Math.max(-1, ...[...((await rows.textContent()) ?? '').matchAll(/L(\d{9})/g)].map((m) => Number(m[1])));
  // The last line on screen when the key reaches the page, read there: read through Playwright
  // before sending the key, it missed what scrolled during two CDP round trips (~1-4 MB here).
  // Kept as the terminal changes (the last line shown before the key), rows looked up afresh. Catch-up's
  // first pictures began with a full reset (RIS), which empties xterm's DOM rows: a key found them
  // empty, and single trials claimed 13-92 MB (measured while the plain-run path was built).
  await page.evaluate(
    `void (window.__atCtrlC = new Promise((resolve) => {
    const box = document.querySelector('.term-box');
    const last = () => Math.max(-1, ` +
      `...[...(box.querySelector('.xterm-rows')?.textContent ?? '').matchAll(/L(\\d{9})/g)].map((m) => Number(m[1])));
    let shown = last();
    const mo = new MutationObserver(() => (shown = Math.max(shown, last())));
    mo.observe(box, { childList: true, subtree: true, characterData: true });
    const onKey = (e) => {
      if (!(e.ctrlKey && e.code === 'KeyC')) return;
      document.removeEventListener('keydown', onKey, true);
      mo.disconnect();
      resolve(Math.max(shown, last()));
    };
    document.addEventListener('keydown', onKey, true);
  }))`,
  );
  const t = Date.now();
  await page.keyboard.press('Control+C');
  const atKey = (await page.evaluate('window.__atCtrlC')) as number;
  await page.keyboard.type(`echo STOPPED-$((2+${trial}))\n`);
  await rows
    .getByText(`STOPPED-${2 + trial}`)
    .first()
    .waitFor({ timeout: 120_000 });
  const ms = Date.now() - t;
  // Read after the closing picture (screen and scrollback), which follows the output by QUIET_MS.
  let end = -1;
  await page.waitForTimeout(300);
  for (const until = Date.now() + 5_000; end < 0 && Date.now() < until; await page.waitForTimeout(50)) end = await lastLine();
  return { after: (end - atKey) * (LINE_BYTES + 1), ms };
}

/** LINES numbered lines of LINE_BYTES ("L000000042 aaa…\n"; one more byte each after the pty's CRLF). */
function writeLines(file: string) {
  const fd = openSync(file, 'w');
  const pad = 'a'.repeat(LINE_BYTES - 12);
  for (let i = 0; i < LINES; i += 10_000) {
    let block = '';
    for (let j = i; j < i + 10_000; j++) block += `L${String(j).padStart(9, '0')} ${pad}\n`;
    writeSync(fd, block);
  }
  closeSync(fd);
}

/**
 * MB/s of xterm alone: 100 MB of 'a' written in 256 KB chunks, two in flight, into a visible
 * terminal; and the CPU it took (`snap` before and after, while its renderer process lives).
 */
async function xtermAlone(browser: Browser, cols: number, rows: number, snap: () => CpuSnapshot): Promise<{ mbs: number; cpu: CpuUse }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await page.setContent('<div id="t" style="width:1200px;height:860px"></div>');
    const lib = join(process.cwd(), 'node_modules', '@xterm', 'xterm');
    await page.addStyleTag({ path: join(lib, 'css', 'xterm.css') });
    await page.addScriptTag({ path: join(lib, 'lib', 'xterm.js') });
    const before = snap();
    // A string, not a function: tsx's transform would add helpers the page does not have.
    const ms = (await page.evaluate(
      `new Promise((resolve) => {
      const term = new Terminal({ cols: ${cols}, rows: ${rows}, scrollback: 10000, fontSize: 13, ` +
        `fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace" });
      term.open(document.getElementById('t'));
      const chunk = new Uint8Array(256 * 1024).fill(97);
      const total = ${SIZE};
      const t0 = performance.now();
      let sent = 0, inflight = 0;
      const pump = () => {
        while (inflight < 2 && sent < total) {
          inflight++;
          sent += chunk.length;
          term.write(chunk, () => {
            inflight--;
            if (sent >= total && inflight === 0) resolve(performance.now() - t0);
            else pump();
          });
        }
      };
      pump();
    })`,
    )) as number;
    return { mbs: SIZE / MB / (ms / 1000), cpu: cpuSince(before, snap()) };
  } finally {
    await page.close();
  }
}

function readAll(dir: string): string {
  try {
    return readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');
  } catch {
    return '';
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
