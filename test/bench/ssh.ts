// bench ssh: 100 MB of terminal output from a real sshd through SessionManager + StreamHub to a
// consumer that decodes and acknowledges every event, against OpenSSH's own client (`ssh -tt host
// cat file > /dev/null`, the same pty path) in the same run. Prints MB/s, the ratio (target ≥ 0.5)
// and the peak memory growth of this process while streaming.
import { needs } from '../support/system';
import { makeEnv, openShell, peakRssGrowth, waitFor } from '../ssh/harness';
import { MB, sshdWithData } from './_ssh-fixture';

const SIZE = 100 * MB;

async function main() {
  const missing = needs(['/usr/sbin/sshd', 'ssh', 'ssh-keygen', 'head', 'tr']);
  if (missing) {
    console.log(`bench ssh: skipped (${missing})`);
    return;
  }
  const { sshd, key, data, openssh } = await sshdWithData(SIZE);
  const env = makeEnv();
  try {
    // Baselines: OpenSSH's client with a pty and without, output to /dev/null.
    const baseline = await openssh(true);
    const raw = await openssh(false);

    // Ours: the same file through the session manager and the hub.
    const c = await openShell(env, sshd.port, key.private, { keepText: 4096 });
    const before = c.bytes;
    const t = Date.now();
    const { growthMb } = await peakRssGrowth(async () => {
      env.manager.input(c.sessionId, `cat ${data}; echo; echo END-$((40+2))\n`);
      await waitFor('END-42', () => c.text.includes('END-42'), 240_000);
    });
    const oursSecs = (Date.now() - t) / 1000;
    const got = c.bytes - before;
    if (got < SIZE) throw new Error(`only ${got} bytes arrived`);
    const ours = SIZE / MB / oursSecs;
    console.log(`bench ssh-openssh-pty: ${baseline.toFixed(1)} MB/s`);
    console.log(`bench ssh-openssh-nopty: ${raw.toFixed(1)} MB/s`);
    console.log(`bench ssh-session-hub: ${ours.toFixed(1)} MB/s ratio ${(ours / baseline).toFixed(2)} target 0.5`);
    console.log(`bench ssh-session-hub-vs-openssh-nopty: ${ours.toFixed(1)} MB/s ratio ${(ours / raw).toFixed(2)} target 0.5`);
    console.log(`bench ssh-session-peak-rss-growth: ${growthMb.toFixed(1)} MB (${c.events} events, max unacked ${c.maxPressure} bytes)`);
  } finally {
    env.dispose();
    await sshd.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
