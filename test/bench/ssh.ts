// bench ssh: 100 MB of terminal output from a real sshd through SessionManager + StreamHub to a
// consumer that decodes and acknowledges every event, against OpenSSH's own client (`ssh -tt host
// cat file > /dev/null`, the same pty path) in the same run. Prints MB/s, the ratio (target ≥ 0.5)
// and the peak memory growth of this process while streaming.
import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { needs } from '../support/system';
import { Consumer, makeEnv, nextPrompt, waitFor, waitState } from '../ssh/harness';
import { rssKb, Sshd } from '../ssh/sshd';
import { generateEd25519 } from '../../main/services/ssh/keygen';

const MB = 1024 * 1024;
const SIZE = 100 * MB;

async function main() {
  const missing = needs(['/usr/sbin/sshd', 'ssh', 'ssh-keygen', 'head', 'tr']);
  if (missing) {
    console.log(`bench ssh: skipped (${missing})`);
    return;
  }
  const key = generateEd25519('povdesk-test');
  const sshd = new Sshd();
  sshd.authorize(key.public);
  await sshd.start();
  const keyFile = join(sshd.dir, 'client_key');
  writeFileSync(keyFile, key.private);
  chmodSync(keyFile, 0o600);
  const data = join(sshd.dir, 'data.bin');
  await run('sh', ['-c', `head -c ${SIZE} /dev/zero | tr '\\0' a > ${data}`]);
  const env = makeEnv();
  try {
    // Baseline: OpenSSH client with a pty, output to /dev/null.
    const sshArgs = ['-tt', '-i', keyFile, '-p', String(sshd.port), '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', 'root@127.0.0.1'];
    await run('ssh', [...sshArgs, 'true']); // warm up (key exchange, page cache)
    let t = Date.now();
    await run('ssh', [...sshArgs, `cat ${data}`]);
    const baseSecs = (Date.now() - t) / 1000;
    t = Date.now();
    await run('ssh', [...sshArgs.filter((a) => a !== '-tt'), `cat ${data}`]);
    const rawSecs = (Date.now() - t) / 1000;

    // Ours: the same file through the session manager and the hub.
    const id = await env.manager.open({
      target: { host: '127.0.0.1', port: sshd.port, username: 'root', auth: { kind: 'privateKey', privateKey: key.private }, jump: [], keepaliveSec: 15, autoReconnect: false },
      cols: 120,
      rows: 40,
    });
    const c = new Consumer(env.hub, id, 0, 4096);
    env.manager.answerHostKey((await nextPrompt(env, id)).promptId, true);
    await waitState(env, id, 'open');
    await waitFor('the prompt', () => /[#$] $/.test(c.text));
    global.gc?.();
    const base = rssKb();
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb())), 20);
    const before = c.bytes;
    t = Date.now();
    env.manager.input(id, `cat ${data}; echo; echo END-$((40+2))\n`);
    await waitFor('END-42', () => c.text.includes('END-42'), 240_000);
    const oursSecs = (Date.now() - t) / 1000;
    clearInterval(sampler);
    const got = c.bytes - before;
    if (got < SIZE) throw new Error(`only ${got} bytes arrived`);
    const ours = SIZE / MB / oursSecs;
    const baseline = SIZE / MB / baseSecs;
    console.log(`bench ssh-openssh-pty: ${baseline.toFixed(1)} MB/s`);
    console.log(`bench ssh-openssh-nopty: ${(SIZE / MB / rawSecs).toFixed(1)} MB/s`);
    console.log(`bench ssh-session-hub: ${ours.toFixed(1)} MB/s ratio ${(ours / baseline).toFixed(2)} target 0.5`);
    console.log(`bench ssh-session-hub-vs-openssh-nopty: ${ours.toFixed(1)} MB/s ratio ${(ours / (SIZE / MB / rawSecs)).toFixed(2)} target 0.5`);
    console.log(`bench ssh-session-peak-rss-growth: ${((peak - base) / 1024).toFixed(1)} MB (${c.events} events, max unacked ${c.maxPressure} bytes)`);
  } finally {
    env.dispose();
    await sshd.dispose();
  }
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d));
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
