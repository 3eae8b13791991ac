// bench ssh-ui: 100 MB from a real sshd into the renderer's xterm in Chromium (browser mode: the
// built host, its HTTP byte stream + WebSocket, TerminalsPage), against OpenSSH `ssh -tt host cat file > /dev/null` in
// the same run. Prints MB/s, the ratio (target ≥ 0.5) and the host process's peak RSS growth.
// Needs the built app (`npm run build`) with the ssh domain wired in; says so and skips otherwise.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from '@playwright/test';
import { needs } from '../support/system';
import { CLI, startHostProcess, stopHostProcess } from '../e2e/host-process';
import { rssKb } from '../ssh/sshd';
import { MB, sshdWithData } from './_ssh-fixture';

const SIZE = 100 * MB;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function main() {
  const missing = needs(['/usr/sbin/sshd', 'ssh', CHROMIUM]);
  if (missing) return console.log(`bench ssh-ui: skipped (${missing})`);
  if (!existsSync(CLI) || !/'ssh\.open'|"ssh\.open"/.test(readFileSync(CLI, 'utf8') + readAll(join(CLI, '..', 'chunks')))) {
    return console.log('bench ssh-ui: skipped (the built app has no ssh.open; run `npm run build` after wiring the ssh domain)');
  }
  const { sshd, key, data, openssh } = await sshdWithData(SIZE);
  const home = mkdtempSync(join(tmpdir(), 'povdesk-bench-'));
  const host = await startHostProcess({ ...process.env, POVDESK_HOME: home });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const baseline = await openssh(true);
    // The literal baseline is `ssh host cat` with no terminal at all; a terminal needs a
    // pty, so the target ratio is taken against -tt, and this one is printed for the record.
    const noPty = await openssh(false);

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(host.openUrl);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Terminals', exact: true }).click();
    const form = page.getByRole('form', { name: 'Quick connect' });
    await form.getByLabel('Host', { exact: true }).fill('127.0.0.1');
    await form.getByLabel('Port', { exact: true }).fill(String(sshd.port));
    await form.getByLabel('User', { exact: true }).fill('root');
    await form.getByLabel('Sign in with').selectOption('privateKey');
    await form.getByLabel('Private key (OpenSSH)').fill(key.private);
    await form.getByRole('button', { name: 'Connect' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Trust and connect' }).click();
    await page.getByTestId('term-status').getByText('open', { exact: true }).waitFor();
    const rows = page.locator('.term-box .xterm-rows');
    await page.locator('.term-box .xterm').click();
    await page.keyboard.type('echo ready-$((1+1))\n');
    await rows.getByText('ready-2').first().waitFor();
    await page.keyboard.type('echo SZ-$(stty size | tr " " x)-END\n');
    const [termRows, termCols] = (await rows.getByText(/SZ-\d+x\d+-END/).first().textContent())!.match(/SZ-(\d+)x(\d+)/)!.slice(1).map(Number);
    const pid = host.child.pid!;
    const base = rssKb(pid);
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 50);
    const t = Date.now();
    await page.keyboard.type(`cat ${data}; echo; echo END-$((40+2))\n`);
    await rows.getByText('END-42').first().waitFor({ timeout: 600_000 });
    const secs = (Date.now() - t) / 1000;
    clearInterval(sampler);
    const ours = SIZE / MB / secs;
    const alone = await xtermAlone(browser, termCols!, termRows!);
    console.log(`bench ssh-ui-openssh-pty: ${baseline.toFixed(1)} MB/s`);
    console.log(`bench ssh-ui-openssh-nopty: ${noPty.toFixed(1)} MB/s`);
    console.log(`bench ssh-ui-xterm: ${ours.toFixed(1)} MB/s ratio ${(ours / baseline).toFixed(2)} target 0.5`);
    console.log(`bench ssh-ui-xterm-vs-nopty: ratio ${(ours / noPty).toFixed(2)}`);
    console.log(`bench ssh-ui-xterm-alone: ${alone.toFixed(1)} MB/s (the same 100 MB written into a bare xterm of the same size, ${termCols}x${termRows}, in the same Chromium: the renderer's ceiling) ratio ours/alone ${(ours / alone).toFixed(2)}`);
    console.log(`bench ssh-ui-host-peak-rss-growth: ${((peak - base) / 1024).toFixed(1)} MB`);
  } finally {
    await browser.close();
    await stopHostProcess(host);
    await sshd.dispose();
    rmSync(home, { recursive: true, force: true });
  }
}

/** MB/s of xterm alone: 100 MB of 'a' written in 256 KB chunks, two in flight, into a visible terminal. */
async function xtermAlone(browser: Browser, cols: number, rows: number): Promise<number> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await page.setContent('<div id="t" style="width:1200px;height:860px"></div>');
    const lib = join(process.cwd(), 'node_modules', '@xterm', 'xterm');
    await page.addStyleTag({ path: join(lib, 'css', 'xterm.css') });
    await page.addScriptTag({ path: join(lib, 'lib', 'xterm.js') });
    // A string, not a function: tsx's transform would add helpers the page does not have.
    const ms = (await page.evaluate(`new Promise((resolve) => {
      const term = new Terminal({ cols: ${cols}, rows: ${rows}, scrollback: 10000, fontSize: 13, fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace" });
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
    })`)) as number;
    return SIZE / MB / (ms / 1000);
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
