// Shared by the ssh benches: a real sshd that accepts a fresh key, the key written where OpenSSH's
// client can use it, a file of 'a's to cat, and the OpenSSH baseline runs against it.
import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from '@playwright/test';
import { sshdWithKey, sshLogin, type Sshd } from '../ssh/sshd';

export const MB = 1024 * 1024;

export interface SshdWithData {
  sshd: Sshd;
  key: { private: string; public: string };
  /** The file of `size` bytes on the server side. */
  data: string;
  /** OpenSSH client arguments with a pty (-tt) up to and including the destination. */
  sshArgs: string[];
  /** MB/s of `ssh [-tt] host cat data > /dev/null`. */
  openssh(pty: boolean): Promise<number>;
  /** Milliseconds of `ssh [-tt] host true`: process start, key exchange, auth, channel, exit. */
  opensshSetupMs(pty: boolean): Promise<number>;
}

export async function sshdWithData(size: number): Promise<SshdWithData> {
  const { sshd, key } = await sshdWithKey();
  const keyFile = join(sshd.dir, 'client_key');
  writeFileSync(keyFile, key.private);
  chmodSync(keyFile, 0o600);
  const data = join(sshd.dir, 'data.bin');
  await run('sh', ['-c', `head -c ${size} /dev/zero | tr '\\0' a > ${data}`]);
  const sshArgs = [
    '-tt',
    '-i',
    keyFile,
    '-p',
    String(sshd.port),
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    `${sshLogin()}@127.0.0.1`,
  ];
  await run('ssh', [...sshArgs, 'true']); // warm up (key exchange, page cache)
  return {
    sshd,
    key,
    data,
    sshArgs,
    async openssh(pty) {
      const t = Date.now();
      await run('ssh', [...(pty ? sshArgs : sshArgs.slice(1)), `cat ${data}`]);
      return size / MB / ((Date.now() - t) / 1000);
    },
    async opensshSetupMs(pty) {
      const t = Date.now();
      await run('ssh', [...(pty ? sshArgs : sshArgs.slice(1)), 'true']);
      return Date.now() - t;
    },
  };
}

export function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d));
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}

/**
 * In the app at `url`: Terminals → Quick connect to this sshd as the test login (sshLogin) with the key, trust the host
 * key, wait for a shell. Returns the terminal's rendered rows.
 */
export async function connectInApp(page: Page, url: string, s: Pick<SshdWithData, 'sshd' | 'key'>): Promise<Locator> {
  await page.goto(url);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Terminals', exact: true }).click();
  const form = page.getByRole('form', { name: 'Quick connect' });
  await form.getByLabel('Host', { exact: true }).fill('127.0.0.1');
  await form.getByLabel('Port', { exact: true }).fill(String(s.sshd.port));
  await form.getByLabel('User', { exact: true }).fill(sshLogin());
  await form.getByLabel('Sign in with').selectOption('privateKey');
  await form.getByLabel('Private key (OpenSSH)').fill(s.key.private);
  await form.getByRole('button', { name: 'Connect' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Trust and connect' }).click();
  await page.getByTestId('term-status').getByText('open', { exact: true }).waitFor();
  const rows = page.locator('.term-box .xterm-rows');
  await page.locator('.term-box .xterm').click();
  await page.keyboard.type('echo ready-$((1+1))\n');
  await rows.getByText('ready-2').first().waitFor();
  return rows;
}
