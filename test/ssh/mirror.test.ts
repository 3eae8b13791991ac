// The host's copy of the screen (main/services/ssh/mirror.ts) holds plain text unparsed, drops what
// can no longer be on the screen or in the scrollback, and takes screen pictures from a scratch
// terminal (docs/ssh.md, "Plain runs"). Checked against the same copy parsing every byte
// (`plain: false`), over random streams on small terminals (so a few KB fill the scrollback many
// times), cut into random chunks, inside sequences and UTF-8 characters too.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainAdvance, TermMirror } from '../../main/services/ssh/mirror';
import { rng } from '../support/random';
import { FileTailBackend } from '../../main/services/ssh/console-backends';
import { makeEnv, waitState } from './harness';

/** Pieces of output: mostly plain text (long runs, lines, bare CR and LF), now and then anything else a shell prints. */
function stream(r: () => number, pieces: number): Buffer {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const printable = () => String.fromCharCode(0x20 + Math.floor(r() * 95));
  const other = [
    '\x1b[31m',
    '\x1b[0m',
    '\x1b[1;44m',
    '\x1b[3A',
    '\x1b[2;5H',
    '\x1b[2;4r',
    '\x1b[r',
    '\x1b[?1049h',
    '\x1b[?1049l',
    '\x1b[4h',
    '\x1b[4l',
    '\x1b[?7l',
    '\x1b[?7h',
    '\x1b(0',
    '\x1b(B',
    '\x1b]0;title aaaa bbbb\x07',
    '\t',
    '\b',
    'é€x',
    '\x1b[2J',
    '\x1b[K',
    '\x1b[?25l',
    '\x1b[?25h',
    '\x1b[?1h',
    '\x1b[?2004h',
    '\x1b7',
    '\x1b8',
    '\x1bM',
    '\x1b[S',
    // margins set, put back and ignored in every spelling xterm reads; the soft and the full reset
    '\x1b[0;99r',
    '\x1b[2r',
    '\x1b[1;2r',
    '\x1b[3;2r',
    '\x1b[;0r',
    '\x1b[!p',
    '\x1bc',
    '\x1b[1:2;3r',
  ];
  let out = '';
  for (let i = 0; i < pieces; i++) {
    const k = r();
    if (k < 0.3) out += 'a'.repeat(1 + Math.floor(r() * 400));
    else if (k < 0.55)
      for (let j = Math.floor(r() * 30); j > 0; j--) out += Array.from({ length: Math.floor(r() * 40) }, printable).join('') + '\r\n';
    else if (k < 0.65) out += pick(['\r', '\n', '\r\n', '\n\n\n', 'x\r']);
    else if (k < 0.8) out += Array.from({ length: Math.floor(r() * 200) }, printable).join('');
    else if (k < 0.83)
      out += pick(['\x1b[H', '\x1b[1;1H\x1b[J']); // back to the top: the lines below are old
    else if (k < 0.85)
      out += `\x1b]0;${'t'.repeat(Math.floor(r() * 900))}\x07`; // plain bytes inside a sequence
    else out += pick(other);
  }
  return Buffer.from(out, 'utf8');
}

type Internals = {
  term: {
    rows: number;
    _core: {
      buffer: { x: number; y: number; ybase: number; lines: { length: number } };
      buffers: { normal: { scrollTop: number; scrollBottom: number } };
      _inputHandler: { _utf8Decoder: { interim: Uint8Array } };
    };
  };
};
const cursor = (m: TermMirror) => {
  const b = (m as unknown as Internals).term._core.buffer;
  return { x: b.x, y: b.y, ybase: b.ybase, lines: b.lines.length };
};
/** What the mirror follows through hooks and bytes, as xterm's core has it (the tests may read the core). */
const actual = (m: TermMirror) => {
  const { term } = m as unknown as Internals;
  const normal = term._core.buffers.normal;
  return {
    margins: normal.scrollTop !== 0 || normal.scrollBottom !== term.rows - 1,
    utf8Whole: term._core._inputHandler._utf8Decoder.interim[0] === 0,
  };
};
const parsed = (m: TermMirror) => new Promise<void>((resolve) => m.whenParsed(resolve));

/** Runs `fn` as if a release had renamed the core's writeSync (taken off its prototype meanwhile). */
async function withoutWriteSync(fn: () => Promise<void>): Promise<void> {
  const probe = new TermMirror(10, 4, () => {});
  let proto = Object.getPrototypeOf((probe as unknown as { term: { _core: object } }).term._core) as Record<string, unknown>;
  while (!Object.prototype.hasOwnProperty.call(proto, 'writeSync')) proto = Object.getPrototypeOf(proto) as Record<string, unknown>;
  probe.dispose();
  const writeSync = proto['writeSync'];
  delete proto['writeSync'];
  try {
    await fn();
  } finally {
    proto['writeSync'] = writeSync;
  }
}

async function compare(seed: number, totals: { skipped: number; plainPictures: number; checked: number }) {
  const r = rng(seed);
  const cols = 5 + Math.floor(r() * 26);
  const rows = 2 + Math.floor(r() * 7);
  const scrollback = Math.floor(r() * 40);
  const fast = new TermMirror(cols, rows, () => {}, { scrollback });
  const ref = new TermMirror(cols, rows, () => {}, { scrollback, plain: false });
  expect(fast.plainPath).toBe(true);
  const bytes = stream(r, 40 + Math.floor(r() * 80));
  const where = `seed ${seed} (${cols}x${rows}, scrollback ${scrollback})`;
  for (let at = 0; at < bytes.length;) {
    const n = r() < 0.2 ? 1 + Math.floor(r() * 3) : 1 + Math.floor(r() * 300);
    const chunk = bytes.subarray(at, at + n);
    at += chunk.length;
    fast.write(chunk, false);
    ref.write(chunk, false);
    if (r() < 0.01) {
      // A resize, with output still queued in both. The rows only: after a change of columns xterm's
      // reflow depends on more than the buffer's contents (two terminals with equal contents but
      // different pasts can reflow differently), so that case has its own test below.
      const w = 2 + Math.floor(r() * 7);
      fast.resize(cols, w);
      ref.resize(cols, w);
    }
    if (r() < 0.15) {
      // Wait for the reference only: a screen picture taken from the scratch terminal of the run still
      // held must be the reference's screen now (one taken from the copy itself may lag, as before, and
      // one of a run its parser has not finished shows the run's end: the test above).
      await parsed(ref);
      const before = fast.plainPictures;
      const held = fast.pending === 0;
      const pic = fast.picture(false);
      if (fast.plainPictures > before && held) {
        totals.checked++;
        expect(pic.toString(), `${where}, screen picture after ${at} bytes`).toBe(ref.picture(false).toString());
      }
    }
  }
  // the cursor's state too, pending wrap included: one more character shows where it goes
  for (const m of [fast, ref]) m.write(Buffer.from('Z'), false);
  await Promise.all([parsed(fast), parsed(ref)]);
  expect(fast.picture(true).toString(), `${where}, screen and scrollback`).toBe(ref.picture(true).toString());
  expect(cursor(fast), where).toEqual(cursor(ref));
  totals.skipped += fast.skipped;
  totals.plainPictures += fast.plainPictures;
  fast.dispose();
  ref.dispose();
}

describe('plain runs in the copy of the screen', () => {
  it('plainAdvance follows xterm: column (pending wrap at cols) and line advances', () => {
    expect(plainAdvance(Buffer.from('abc'), 0, 5)).toEqual({ x: 3, advances: 0 });
    expect(plainAdvance(Buffer.from('abcde'), 0, 5)).toEqual({ x: 5, advances: 0 }); // pending wrap
    expect(plainAdvance(Buffer.from('abcdef'), 0, 5)).toEqual({ x: 1, advances: 1 });
    expect(plainAdvance(Buffer.from('\n'), 5, 5)).toEqual({ x: 4, advances: 1 }); // LF cancels the pending wrap
    expect(plainAdvance(Buffer.from('ab\r\ncd'), 3, 5)).toEqual({ x: 2, advances: 1 }); // 'ab' ends at a pending wrap, CR cancels it
    expect(plainAdvance(Buffer.from('a'.repeat(20)), 5, 5)).toEqual({ x: 5, advances: 4 });
    expect(plainAdvance(Buffer.from('a\x1b[0m'), 0, 5)).toBeNull();
    expect(plainAdvance(Buffer.from('a\té'), 0, 5)).toBeNull();
  });

  it('ends exactly where parsing every byte ends, and its screen pictures are the screen (300 random streams)', async () => {
    const totals = { skipped: 0, plainPictures: 0, checked: 0 };
    for (let seed = 1; seed <= 300; seed++) await compare(seed, totals);
    // the path was taken: chunks dropped unparsed, screen pictures from the scratch terminal compared
    expect(totals.skipped).toBeGreaterThan(100_000);
    expect(totals.checked).toBeGreaterThan(200);
  });

  it('a screen picture is a state the screen was really in, with old lines below the cursor', async () => {
    for (const lines of [3, 5, 6, 7, 8, 9, 12, 20]) {
      const m = new TermMirror(10, 4, () => {}, { scrollback: 5 });
      const ref = new TermMirror(10, 4, () => {}, { scrollback: 5, plain: false });
      const fill = Buffer.from('XXXXXXXXXX'.repeat(4) + '\x1b[H'); // a full screen, cursor back at the top
      for (const t of [m, ref]) t.write(fill, false);
      await Promise.all([parsed(m), parsed(ref)]);
      const before = ref.picture(false).toString();
      const run = Buffer.from('ab\r\n'.repeat(lines));
      for (const t of [m, ref]) t.write(run, false);
      await parsed(ref);
      const pic = m.picture(false).toString();
      // parsed afresh (may still show the screen before the run) or from the scratch terminal: never anything else
      expect([before, ref.picture(false).toString()], `${lines} lines`).toContain(pic);
      if (lines > 8) expect(m.plainPictures, `${lines} lines`).toBe(1); // more than twice the screen: the scratch terminal's
      m.dispose();
      ref.dispose();
    }
  });

  it('old lines below the cursor: a run just longer than the buffer, one line a chunk, ends as parsed', async () => {
    for (let lines = 6; lines <= 18; lines++) {
      const m = new TermMirror(10, 4, () => {}, { scrollback: 5 });
      const ref = new TermMirror(10, 4, () => {}, { scrollback: 5, plain: false });
      for (const t of [m, ref]) t.write(Buffer.from('XXXXXXXXXX'.repeat(4) + '\x1b[H'), false);
      await parsed(m); // idle: the run begins from the copy itself, cursor at the top
      for (let i = 0; i < lines; i++) for (const t of [m, ref]) t.write(Buffer.from(`l${i}\r\n`), false);
      await Promise.all([parsed(m), parsed(ref)]);
      expect(m.picture(true).toString(), `${lines} lines`).toBe(ref.picture(true).toString());
      m.dispose();
      ref.dispose();
    }
  });

  it('a resize to other columns with a run held: the run is laid out at the old size first', async () => {
    for (const [cols, to] of [
      [20, 12],
      [12, 20],
      [30, 29],
    ] as const) {
      const m = new TermMirror(cols, 5, () => {}, { scrollback: 20 });
      const ref = new TermMirror(cols, 5, () => {}, { scrollback: 20, plain: false });
      for (const t of [m, ref]) t.write(Buffer.from('$ cat x\r\n'), false);
      await parsed(m);
      for (let i = 0; i < 200; i++) for (const t of [m, ref]) t.write(Buffer.from(`line ${i} ${'y'.repeat(i % 37)}\r\n`), false);
      expect(m.skipped).toBeGreaterThan(0);
      for (const t of [m, ref]) t.resize(to, 7);
      for (const t of [m, ref]) t.write(Buffer.from('after\r\n'), false);
      await Promise.all([parsed(m), parsed(ref)]);
      expect(m.picture(true).toString(), `${cols} to ${to} columns`).toBe(ref.picture(true).toString());
      m.dispose();
      ref.dispose();
    }
  });

  it('a resize with nothing left to parse: the plain text after it is laid out at the new size', async () => {
    for (const [cols, to] of [
      [20, 12],
      [12, 20],
    ] as const) {
      const m = new TermMirror(cols, 5, () => {}, { scrollback: 20 });
      const ref = new TermMirror(cols, 5, () => {}, { scrollback: 20, plain: false });
      for (const t of [m, ref]) t.write(Buffer.from('$ cat x\r\n'), false);
      await Promise.all([parsed(m), parsed(ref)]); // idle: the resize waits for nothing
      for (const t of [m, ref]) t.resize(to, 7);
      const lines = (from: number) => {
        for (let i = from; i < from + 200; i++)
          for (const t of [m, ref]) t.write(Buffer.from(`line ${i} ${'y'.repeat(i % 37)}\r\n`), false);
      };
      lines(0); // before the resize takes effect: parsed, not a run laid out at the old size
      await Promise.all([parsed(m), parsed(ref)]);
      expect(m.picture(true).toString(), `${cols} to ${to} columns`).toBe(ref.picture(true).toString());
      lines(200); // after it: a run again, at the new size
      await Promise.all([parsed(m), parsed(ref)]);
      expect(m.skipped).toBeGreaterThan(0);
      expect(m.picture(true).toString(), `${cols} to ${to} columns, then a run`).toBe(ref.picture(true).toString());
      m.dispose();
      ref.dispose();
    }
  });

  it('a flood of plain text is mostly never parsed, and its pictures show its end, though it began while the parser was busy', async () => {
    const m = new TermMirror(80, 24, () => {});
    const ref = new TermMirror(80, 24, () => {}, { plain: false });
    // a coloured prompt and 200 KB of coloured output still being parsed when the flood begins
    const before = Buffer.from('\x1b[1;32m$\x1b[0m cat big.log\r\n' + '\x1b[33mwarm-up\x1b[0m line\r\n'.repeat(8000));
    m.write(before, false);
    ref.write(before, false);
    let line = 0;
    for (let i = 0; i < 400; i++) {
      let s = '';
      for (let j = 0; j < 100; j++) s += `line ${String(line++).padStart(7, '0')} ${'x'.repeat(60)}\r\n`;
      const chunk = Buffer.from(s);
      m.write(chunk, false);
      ref.write(chunk, false);
    }
    await parsed(ref);
    const screen = m.picture(false);
    expect(m.plainPictures).toBe(1);
    expect(screen.toString()).toBe(ref.picture(false).toString());
    expect(screen.toString()).toContain(`line ${String(line - 1).padStart(7, '0')}`);
    // 40 000 lines, the buffer holds 10 024: at least 29 000 lines' bytes were never parsed
    expect(m.skipped).toBeGreaterThan(29_000 * 71);
    await parsed(m);
    expect(m.picture(true).toString()).toBe(ref.picture(true).toString());
    m.dispose();
    ref.dispose();
  });

  it('a picture taken while a flood is parsed after other output ended it shows the flood, not the screen before it', async () => {
    const m = new TermMirror(80, 24, () => {});
    const ref = new TermMirror(80, 24, () => {}, { plain: false });
    const chunks = [Buffer.from('\x1b[1;32m$\x1b[0m cat big.log\r\n')];
    for (let i = 0; i < 300; i++) chunks.push(Buffer.from(`line ${String(i).padStart(7, '0')} ${'x'.repeat(60)}\r\n`.repeat(100)));
    for (const c of chunks) [m, ref].forEach((t) => t.write(c, false));
    await Promise.all([parsed(m), parsed(ref)]);
    const flood = Buffer.from(`flood ${'y'.repeat(66)}\r\n`.repeat(5000));
    for (const t of [m, ref]) t.write(flood, false);
    await parsed(ref);
    const end = ref.picture(false).toString();
    // the prompt after it is not plain text: the copy hands the run to its parser and a picture is due at once
    for (const t of [m, ref]) t.write(Buffer.from('\x1b[1;32m$\x1b[0m '), false);
    expect(m.pending).toBeGreaterThan(flood.length / 2); // what it kept of the run, not parsed yet
    expect(m.picture(false).toString()).toBe(end);
    await Promise.all([parsed(m), parsed(ref)]);
    expect(m.picture(true).toString()).toBe(ref.picture(true).toString());
    m.dispose();
    ref.dispose();
  });

  const MARGINS = [
    '\x1b[2;4r',
    '\x1b[r',
    '\x1b[0;99r',
    '\x1b[2r',
    '\x1b[1;2r',
    '\x1b[3;2r',
    '\x1b[;0r',
    '\x1b[1:2;3r',
    '\x1b[!p',
    '\x1bc',
    '\x1b[?1049h',
    '\x1b[?1049l',
  ];
  it("what the copy follows through parser hooks and bytes is what xterm's core holds (margins, half a UTF-8 character)", async () => {
    let halves = 0;
    let margins = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const r = rng(seed);
      const cols = 5 + Math.floor(r() * 26);
      const m = new TermMirror(cols, 2 + Math.floor(r() * 7), () => {}, { scrollback: 10, plain: false });
      // what a shell prints, with characters of 2, 3 and 4 bytes, and every way to set or put back margins
      let text = '';
      for (let i = 0; i < 40; i++)
        text += r() < 0.4 ? MARGINS[Math.floor(r() * MARGINS.length)] : stream(r, 2).toString('utf8').replaceAll('x', 'é€😀');
      const bytes = Buffer.from(text, 'utf8');
      for (let at = 0; at < bytes.length;) {
        // now and then a chunk that ends inside a UTF-8 character (just after its first byte)
        const lead = bytes.subarray(at, at + 120).findIndex((b) => b >= 0xc0);
        const chunk = bytes.subarray(at, at + 1 + (lead >= 0 && r() < 0.5 ? lead : Math.floor(r() * 120)));
        at += chunk.length;
        m.write(chunk, false);
        if (r() < 0.05) m.resize(cols, 2 + Math.floor(r() * 7));
        if (r() < 0.6) continue;
        await parsed(m);
        const core = actual(m);
        // margins exactly; a half character never missed (a whole one after a byte >= 0x80 may read as half: no run then)
        expect(m.tracked.margins, `seed ${seed} after ${at} bytes`).toBe(core.margins);
        if (m.tracked.utf8Whole) expect(core.utf8Whole, `seed ${seed} after ${at} bytes`).toBe(true);
        if (!core.utf8Whole) halves++;
        if (core.margins) margins++;
      }
      m.dispose();
    }
    expect(halves).toBeGreaterThan(150);
    expect(margins).toBeGreaterThan(80);
  });

  it('without the core it was written for, every byte is parsed (still exact) and the log hears it once', async () => {
    const lines: { message: string; fields?: Record<string, unknown> }[] = [];
    const log = { warn: (message: string, fields?: Record<string, unknown>) => lines.push({ message, ...(fields ? { fields } : {}) }) };
    await withoutWriteSync(async () => {
      const m = new TermMirror(10, 4, () => {}, { scrollback: 5, log });
      const again = new TermMirror(10, 4, () => {}, { scrollback: 5, log });
      const ref = new TermMirror(10, 4, () => {}, { scrollback: 5, plain: false, log });
      expect([m.plainPath, again.plainPath]).toEqual([false, false]);
      expect(m.plainPathOff).toContain('_core.writeSync');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.message).toContain('plain text is parsed byte by byte');
      expect(lines[0]!.fields).toEqual({ why: "xterm's core has no _core.writeSync" });
      for (let i = 0; i < 200; i++) for (const t of [m, ref]) t.write(Buffer.from(`line ${i}\r\n`), false);
      await Promise.all([parsed(m), parsed(ref)]);
      expect(m.skipped).toBe(0);
      expect(m.picture(true).toString()).toBe(ref.picture(true).toString());
      for (const t of [m, again, ref]) t.dispose();
    });
    const fine = new TermMirror(10, 4, () => {}, { scrollback: 5, log });
    expect(fine.plainPath).toBe(true);
    expect(lines).toHaveLength(1);
    fine.dispose();
  });

  it("the app's terminal sessions pass the app's log to their copy: two sessions, one line", async () => {
    const lines: string[] = [];
    const env = makeEnv({ log: { warn: (message: string) => lines.push(message) } });
    try {
      await withoutWriteSync(async () => {
        writeFileSync(join(env.dir, 'serial.log'), 'boot\r\n');
        for (const title of ['vm1', 'vm2']) {
          const id = env.manager.attach(
            new FileTailBackend(join(env.dir, 'serial.log'), title),
            { cols: 80, rows: 24 },
            { autoReconnect: false },
          );
          await waitState(env, id, 'open');
        }
      });
      expect(lines).toEqual([expect.stringContaining('terminal copy: plain text is parsed byte by byte')]);
    } finally {
      env.dispose();
    }
  });
});
