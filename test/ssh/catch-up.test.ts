// Catch-up (docs/ssh.md): a window slower than a flood is sent pictures of the host's copy of the
// screen instead of every byte, and ends exactly where a window that parsed every byte would be.
// Real sshd, real shell; the window is xterm's own parser and buffer (@xterm/headless, the version
// of the renderer's @xterm/xterm) that acknowledges each event some time after parsing it.
import headless from '@xterm/headless';
import serialize from '@xterm/addon-serialize';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Subscriber } from '../../main/core/streams';
import { PAUSED_READ_BUFFER, SSH2_WINDOW } from '../../main/services/ssh/ssh-backend';
import { MAX_EVENT, MIRROR_HIGH, PICTURE_AHEAD } from '../../main/services/ssh/session';
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
  const core = (t as unknown as { _core: { coreService: { isCursorHidden: boolean }; coreMouseService: { activeEncoding: string } } })
    ._core;
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
  bytes = 0;
  answered = 0;
  /** Called once each event is parsed (before its ack). */
  parsed: (d: SshData) => void = () => {};
  /** Called as each event arrives. */
  received: (d: SshData) => void = () => {};
  constructor(
    private readonly env: Env,
    private readonly id: string,
    private readonly msPer64k: number,
    private readonly msPerEvent = 0,
  ) {
    env.hub.subscribe('ssh.data', id, this);
    this.term.onData((d) => {
      this.answered++;
      env.manager.input(id, d);
    });
  }
  send(stream: string, key: string, data: unknown) {
    if (stream !== 'ssh.data' || key !== this.id) return;
    const d = data as SshData;
    this.bytes += d.bytes;
    this.received(d);
    this.term.write(d.data, () => {
      this.parsed(d);
      setTimeout(() => this.env.hub.ack(this, 'ssh.data', this.id, d.bytes), this.msPerEvent + (this.msPer64k * d.bytes) / 65536);
    });
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
  async function open(msPer64k: number, msPerEvent = 0) {
    const env = makeEnv();
    onTestFinished(() => env.dispose()); // passed or failed: no session or temp dir left behind
    const id = await env.manager.open({
      target: {
        host: '127.0.0.1',
        port: sshd.port,
        username: sshLogin(),
        auth: { kind: 'privateKey', privateKey: key.private },
        jump: [],
        keepaliveSec: 15,
        autoReconnect: false,
      },
      cols: COLS,
      rows: ROWS,
    });
    const reference = makeTerm();
    env.manager.get(id).observe((chunk) => reference.write(chunk));
    const win = new SlowWindow(env, id, msPer64k, msPerEvent);
    env.manager.answerHostKey((await nextPrompt(env, id, 15_000, () => sshd.logTail())).promptId, true);
    await waitState(env, id, 'open');
    await waitFor(
      () => `the prompt; the window shows ${JSON.stringify(text(win.term).slice(-300))}`,
      () => PROMPT.test(text(win.term).trimEnd() + ' '),
    );
    return { env, id, session: env.manager.get(id), reference, win };
  }

  it(
    'ends in the state of a window that parsed every byte: screen, scrollback, colours and modes; far fewer bytes sent; the replay ' +
      'is that state too',
    async () => {
      const { env, id, session, reference, win } = await open(8);
      // Modes the window sees switched on before the flood (application cursor keys, any-motion mouse
      // reports in urxvt encoding, a hidden cursor); ~14 MB of coloured, numbered lines; then some
      // switched off or changed, which only a picture can tell the window.
      const flood =
        `printf '\\033[?1h\\033[?1003h\\033[?1015h\\033[?25l'; ` +
        `awk 'BEGIN{for(i=0;i<200000;i++) printf "\\033[3%dm%08d %s\\033[0m\\n", ` +
        `i%8, i, "padding-padding-padding-padding-padding-padding"}'; ` +
        `printf '\\033[?1l\\033[?1000h\\033[?1006h'; echo FLOOD-$((1+1))`;
      const before = win.bytes;
      let held = 0;
      const sampler = setInterval(() => (held = Math.max(held, session.held())), 5);
      env.manager.input(id, flood + '\n');
      await waitFor(
        () => `FLOOD-2; the window shows ${JSON.stringify(text(win.term).slice(-300))}`,
        () => /^FLOOD-2$/m.test(text(win.term)),
        60_000,
      );
      await waitFor('catch-up to end', () => !session.catchingUp, 10_000);
      clearInterval(sampler);
      env.manager.input(id, 'echo AFTER-$((2+3))\n');
      await waitFor('AFTER-5', () => /^AFTER-5$/m.test(text(win.term)), 10_000);
      await waitFor('the window to settle', () => env.hub.pressure('ssh.data', id) === 0, 10_000);
      await Promise.all([parsed(win.term), parsed(reference)]);
      const sent = win.bytes - before;
      console.log(
        `catch-up: ${session.catchUps} catch-up(s), ${(sent / 1048576).toFixed(2)} MB sent to the window for the flood; at ` +
          `most ${held} bytes held in the host`,
      );
      expect(session.catchUps).toBeGreaterThan(0);
      expect(sent).toBeLessThan(5 * 1024 * 1024);
      // What still scrolls past after Ctrl-C while catching up: what the copy has not parsed, plus ssh2's.
      expect(held).toBeLessThanOrEqual(MIRROR_HIGH + MAX_EVENT + PAUSED_READ_BUFFER + SSH2_WINDOW);
      expect(text(win.term)).toContain('00199999 padding');
      expect(state(win.term)).toBe(state(reference));
      expect(hidden(win.term)).toEqual(hidden(reference));
      expect(hidden(reference)).toMatchObject({
        cursorHidden: true,
        mouseEncoding: 'SGR',
        modes: { applicationCursorKeysMode: false, mouseTrackingMode: 'vt200' },
      });
      // A window attaching now (a reload) is given the same state.
      const replay = makeTerm();
      replay.write(await env.manager.replay(id));
      await parsed(replay);
      expect(state(replay)).toBe(state(reference));
      expect(hidden(replay)).toEqual(hidden(reference));
      expect(replay.buffer.active.length).toBe(reference.buffer.active.length);
    },
    120_000,
  );

  it('plain text (wrapped, then lines) ends in the same state though the copy parsed only its end; so does the replay', async () => {
    const { env, id, session, reference, win } = await open(8);
    env.manager.input(
      id,
      `head -c 12000000 /dev/zero | tr '\\0' a; echo; awk 'BEGIN{for(i=0;i<150000;i++) printf "%08d %s\\n", i, ` +
        `"plain-text-plain-text-plain-text-plain-text"}'; echo PLAIN-$((2+2))\n`,
    );
    await waitFor(
      () => `PLAIN-4; the window shows ${JSON.stringify(text(win.term).slice(-300))}`,
      () => /^PLAIN-4$/m.test(text(win.term)),
      60_000,
    );
    await waitFor('catch-up to end', () => !session.catchingUp, 10_000);
    await waitFor('the window to settle', () => env.hub.pressure('ssh.data', id) === 0, 10_000);
    await Promise.all([parsed(win.term), parsed(reference)]);
    console.log(
      `catch-up, plain text: ${session.catchUps} catch-up(s), ${(session.unparsed / 1048576).toFixed(2)} MB never parsed by the copy`,
    );
    expect(session.catchUps).toBeGreaterThan(0);
    // ~20 MB of output, of which the buffer (10 040 lines) can hold ~1.3 MB of the wrapped and ~0.5 MB of the lines
    expect(session.unparsed).toBeGreaterThan(10 * 1024 * 1024);
    expect(text(win.term)).toContain('00149999 plain-text');
    expect(state(win.term)).toBe(state(reference));
    const replay = makeTerm();
    replay.write(await env.manager.replay(id));
    await parsed(replay);
    expect(state(replay)).toBe(state(reference));
    expect(replay.buffer.active.length).toBe(reference.buffer.active.length);
  }, 120_000);

  const PACED = 'a window slow to take each picture is never shown output more than PICTURE_AHEAD behind what arrived';
  it(PACED, { timeout: 120_000 }, async () => {
    // 60 ms to take each event
    const { env, id, session, win } = await open(8, 60);
    let arrived = -1; // the last numbered line the host has received
    session.observe((chunk) => {
      const m = [
        ...chunk
          .subarray(-200)
          .toString('latin1')
          .matchAll(/L(\d{9})/g),
      ];
      if (m.length) arrived = Number(m[m.length - 1]![1]);
    });
    let worst = 0;
    let pictures = 0;
    let shownRound = 0; // the catch-up whose first picture the window has parsed
    const lastShown = () => Math.max(-1, ...[...text(win.term).matchAll(/L(\d{9})/g)].map((m) => Number(m[1])));
    win.parsed = (d) => {
      const round = rounds.get(d);
      if (round !== undefined) {
        pictures++;
        shownRound = round;
      }
    };
    // A catch-up's pictures, told apart when sent (the closing picture goes out with the bytes after it)
    const rounds = new WeakMap<SshData, number>();
    win.received = (d) =>
      session.catchingUp && Buffer.from(d.data).subarray(0, 8).equals(Buffer.from('\x1b[?1049l')) && rounds.set(d, session.catchUps);
    // What the window shows against what has arrived, all along (not only when a picture lands),
    // from each catch-up's first picture on: before it the window is still parsing the bytes it was
    // sent while it kept up, which flow control bounds (flow.test.ts). On a loaded machine the output
    // can pause long enough to end a catch-up mid-flood and start another.
    const sampler = setInterval(
      () => session.catchingUp && shownRound === session.catchUps && (worst = Math.max(worst, arrived - lastShown())),
      5,
    );
    const LINE = 60; // "L000000042 " + 47 characters + CRLF
    env.manager.input(
      id,
      `awk 'BEGIN{for(i=0;i<400000;i++) printf "L%09d %s\\n", i, "plain-text-plain-text-plain-text-plain-text-pl"}'; echo PACED-$((3+4))\n`,
    );
    await waitFor(
      () => `PACED-7; the window shows ${JSON.stringify(text(win.term).slice(-300))}`,
      () => /^PACED-7$/m.test(text(win.term)),
      90_000,
    );
    clearInterval(sampler);
    console.log(
      `catch-up pacing: ${pictures} pictures in ${session.catchUps} catch-up(s); the screen shown was at most ` +
        `${((worst * LINE) / 1048576).toFixed(2)} MB behind the output that had arrived`,
    );
    // past the mark: what arrived before the pause took (one ssh2 packet, ≤ 32 KB), and a line
    expect(worst * LINE).toBeLessThanOrEqual(PICTURE_AHEAD + 64 * 1024);
    expect(pictures).toBeGreaterThan(20);
  });

  it("a query in the output while catching up is answered once, by the host's copy (the window never saw it)", async () => {
    const { env, id, session, win } = await open(8);
    env.manager.input(
      id,
      `head -c 8000000 /dev/zero | tr '\\0' q; printf '\\033[6n'; IFS= read -rs -d R ans; echo; echo "GOT-\${ans#*[}-END"\n`,
    );
    await waitFor(
      () => `the answer; the window shows ${JSON.stringify(text(win.term).slice(-300))}`,
      () => /GOT-\d+;\d+-END/.test(text(win.term)),
      60_000,
    );
    expect(session.catchUps).toBeGreaterThan(0);
    expect({ copy: session.answered, window: win.answered }).toEqual({ copy: 1, window: 0 });
  }, 90_000);
});
