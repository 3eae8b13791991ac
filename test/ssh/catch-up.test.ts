// Catch-up (docs/ssh.md): a window slower than a flood is sent pictures of the host's copy of the
// screen instead of every byte, and ends exactly where a window that parsed every byte would be.
// Real sshd, real shell; the window is xterm's own parser and buffer (@xterm/headless, the version
// of the renderer's @xterm/xterm) that acknowledges each event some time after parsing it.
import headless from '@xterm/headless';
import serialize from '@xterm/addon-serialize';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Subscriber } from '../../main/core/streams';
import { PAUSED_READ_BUFFER, SSH2_WINDOW } from '../../main/services/ssh/ssh-backend';
import { MAX_EVENT, MIRROR_HIGH } from '../../main/services/ssh/session';
import { TERM_SCROLLBACK, type SshData } from '../../shared/contract/ssh';
import { needs } from '../support/system';
import { makeEnv, nextPrompt, waitFor, waitState, PROMPT, type Env } from './harness';
import { Sshd, sshdWithKey, sshLogin } from './sshd';

const { Terminal } = headless;
const { SerializeAddon } = serialize;
const skip = needs(['/usr/sbin/sshd', 'ssh-keygen', 'awk', 'head', 'tr']);
const COLS = 120;
const ROWS = 40;

type Term = InstanceType<typeof Terminal>;
const makeTerm = () => new Terminal({ cols: COLS, rows: ROWS, scrollback: TERM_SCROLLBACK, allowProposedApi: true });
const parsed = (t: Term) => new Promise<void>((r) => t.write('', r));
const state = (t: Term) => {
  const s = new SerializeAddon();
  t.loadAddon(s);
  return s.serialize();
};
/** What the serializer leaves out: the cursor's visibility and the mouse report encoding (xterm's core; no public API). */
const hidden = (t: Term) => {
  const core = (t as unknown as { _core: { coreService: { isCursorHidden: boolean }; coreMouseService: { activeEncoding: string } } })._core;
  return { modes: t.modes, cursorHidden: core.coreService.isCursorHidden, mouseEncoding: core.coreMouseService.activeEncoding };
};
const text = (t: Term) => {
  const b = t.buffer.active;
  const out: string[] = [];
  for (let i = Math.max(0, b.length - 200); i < b.length; i++) out.push(b.getLine(i)!.translateToString(true));
  return out.join('\n');
};

/** A window like the renderer's: parses each event, acks it `msPer64k` later, and answers queries. */
class SlowWindow implements Subscriber {
  unacked = new Map<string, number>();
  readonly term = makeTerm();
  received = 0;
  answered = 0;
  constructor(private readonly env: Env, private readonly id: string, private readonly msPer64k: number) {
    env.hub.subscribe('ssh.data', id, this);
    this.term.onData((d) => {
      this.answered++;
      env.manager.input(id, d);
    });
  }
  send(stream: string, key: string, data: unknown) {
    if (stream !== 'ssh.data' || key !== this.id) return;
    const d = data as SshData;
    this.received += d.bytes;
    this.term.write(d.data, () => setTimeout(() => this.env.hub.ack(this, 'ssh.data', this.id, d.bytes), (this.msPer64k * d.bytes) / 65536));
  }
}

describe.skipIf(skip)('catch-up: a window slower than the output', () => {
  let sshd: Sshd;
  let key: { private: string; public: string };
  beforeAll(async () => {
    ({ sshd, key } = await sshdWithKey());
  });
  afterAll(async () => {
    await sshd?.dispose();
  });

  /** A session (in its own env: each asks about the host key) whose every byte also goes into `reference`, from the first. */
  async function open(msPer64k: number) {
    const env = makeEnv();
    onTestFinished(() => env.dispose()); // passed or failed: no session or temp dir left behind
    const id = await env.manager.open({
      target: { host: '127.0.0.1', port: sshd.port, username: sshLogin(), auth: { kind: 'privateKey', privateKey: key.private }, jump: [], keepaliveSec: 15, autoReconnect: false },
      cols: COLS,
      rows: ROWS,
    });
    const reference = makeTerm();
    env.manager.get(id).observe((chunk) => reference.write(chunk));
    const win = new SlowWindow(env, id, msPer64k);
    env.manager.answerHostKey((await nextPrompt(env, id, 15_000, () => sshd.logTail())).promptId, true);
    await waitState(env, id, 'open');
    await waitFor(() => `the prompt; the window shows ${JSON.stringify(text(win.term).slice(-300))}`, () => PROMPT.test(text(win.term).trimEnd() + ' '));
    return { env, id, session: env.manager.get(id), reference, win };
  }

  it('ends in the state of a window that parsed every byte: screen, scrollback, colours and modes; far fewer bytes sent; the replay is that state too', async () => {
    const { env, id, session, reference, win } = await open(8);
    // Modes the window sees switched on before the flood (application cursor keys, any-motion mouse
    // reports in urxvt encoding, a hidden cursor); ~14 MB of coloured, numbered lines; then some
    // switched off or changed, which only a picture can tell the window.
    const flood = `printf '\\033[?1h\\033[?1003h\\033[?1015h\\033[?25l'; awk 'BEGIN{for(i=0;i<200000;i++) printf "\\033[3%dm%08d %s\\033[0m\\n", i%8, i, "padding-padding-padding-padding-padding-padding"}'; printf '\\033[?1l\\033[?1000h\\033[?1006h'; echo FLOOD-$((1+1))`;
    const before = win.received;
    let held = 0;
    const sampler = setInterval(() => (held = Math.max(held, session.held())), 5);
    env.manager.input(id, flood + '\n');
    await waitFor(() => `FLOOD-2; the window shows ${JSON.stringify(text(win.term).slice(-300))}`, () => /^FLOOD-2$/m.test(text(win.term)), 60_000);
    await waitFor('catch-up to end', () => !session.catchingUp, 10_000);
    clearInterval(sampler);
    env.manager.input(id, 'echo AFTER-$((2+3))\n');
    await waitFor('AFTER-5', () => /^AFTER-5$/m.test(text(win.term)), 10_000);
    await waitFor('the window to settle', () => env.hub.pressure('ssh.data', id) === 0, 10_000);
    await Promise.all([parsed(win.term), parsed(reference)]);
    const sent = win.received - before;
    console.log(`catch-up: ${session.catchUps} catch-up(s), ${(sent / 1048576).toFixed(2)} MB sent to the window for the flood; at most ${held} bytes held in the host`);
    expect(session.catchUps).toBeGreaterThan(0);
    expect(sent).toBeLessThan(5 * 1024 * 1024);
    // What still scrolls past after Ctrl-C while catching up: what the copy has not parsed, plus ssh2's.
    expect(held).toBeLessThanOrEqual(MIRROR_HIGH + MAX_EVENT + PAUSED_READ_BUFFER + SSH2_WINDOW);
    expect(text(win.term)).toContain('00199999 padding');
    expect(state(win.term)).toBe(state(reference));
    expect(hidden(win.term)).toEqual(hidden(reference));
    expect(hidden(reference)).toMatchObject({ cursorHidden: true, mouseEncoding: 'SGR', modes: { applicationCursorKeysMode: false, mouseTrackingMode: 'vt200' } });
    // A window attaching now (a reload) is given the same state.
    const replay = makeTerm();
    replay.write(await env.manager.replay(id));
    await parsed(replay);
    expect(state(replay)).toBe(state(reference));
    expect(hidden(replay)).toEqual(hidden(reference));
    expect(replay.buffer.active.length).toBe(reference.buffer.active.length);
  }, 120_000);

  it('a query in the output while catching up is answered once, by the host\'s copy (the window never saw it)', async () => {
    const { env, id, session, win } = await open(8);
    env.manager.input(id, `head -c 8000000 /dev/zero | tr '\\0' q; printf '\\033[6n'; IFS= read -rs -d R ans; echo; echo "GOT-\${ans#*[}-END"\n`);
    await waitFor(() => `the answer; the window shows ${JSON.stringify(text(win.term).slice(-300))}`, () => /GOT-\d+;\d+-END/.test(text(win.term)), 60_000);
    expect(session.catchUps).toBeGreaterThan(0);
    expect({ copy: session.answered, window: win.answered }).toEqual({ copy: 1, window: 0 });
  }, 90_000);
});
