import headless from '@xterm/headless';
import serialize from '@xterm/addon-serialize';
import { TERM_SCROLLBACK } from '../../../shared/contract/ssh';
import type { Logger } from '../log/logger';
import { coreOf, plainPathProblem, type Core } from './xterm-core';

const { Terminal } = headless;
const { SerializeAddon } = serialize;
type Term = InstanceType<typeof Terminal>;

/**
 * What a window's xterm is put back to before a picture: the normal screen, a soft reset (DECSTR:
 * modes, attributes, margins, cursor shown), mouse reports off, then the screen and scrollback
 * erased. Not a full reset (RIS): xterm's DOM renderer answers that by emptying its rows, and a key
 * pressed during a flood found them empty (bench ssh-ui's Ctrl-C reading, docs/ssh.md).
 */
const RESET = '\x1b[?1049l\x1b[!p\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[0m\x1b[H\x1b[2J\x1b[3J';
/**
 * Private modes xterm's serializer leaves out but a picture needs: the cursor's visibility and the
 * mouse report encodings (an app that asked for SGR mouse reports must keep getting them).
 */
const EXTRA_MODES = [25, 1005, 1006, 1015] as const;

/** Loggers already told the path is off: once per logger (one per process in the app). */
const told = new WeakSet<object>();

/**
 * Whether the scroll margins are other than the whole screen after DECSTBM with `params` on a screen
 * of `rows` (`before`: whether they were), by xterm's setScrollRegion: top (default 1) and bottom
 * (default, 0 or past the screen: the last row), the sequence ignored unless bottom > top. It reads
 * the parameters without their sub-parameters (the arrays in the public hook's list).
 */
function marginsAfter(params: (number | number[])[], rows: number, before: boolean): boolean {
  const p = params.filter((x): x is number => typeof x === 'number');
  const top = p[0] || 1;
  let bottom = p.length < 2 ? 0 : p[1]!;
  if (bottom === 0 || bottom > rows) bottom = rows;
  if (bottom <= top) return before;
  return !(top === 1 && bottom === rows);
}

/**
 * Where `bytes` leave the cursor, by xterm's rules for plain text (printable ASCII, CR, LF) with
 * auto-wrap on, insert mode off and no scroll margins: the column (`cols` is a pending wrap: the
 * next character goes to the next line) and how many times the cursor went down a line. Null when
 * a byte is anything else. ~1 ns a byte: it never touches a cell.
 */
export function plainAdvance(bytes: Uint8Array, x: number, cols: number): { x: number; advances: number } | null {
  let advances = 0;
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const start = i;
    while (i < n) {
      const b = bytes[i]!;
      if (b < 0x20 || b > 0x7e) break;
      i++;
    }
    if (i > start) {
      if (x >= cols) {
        advances++;
        x = 0;
      }
      const end = x + (i - start); // each character: wrap first if at a pending wrap, then x++
      const wraps = Math.floor((end - 1) / cols);
      advances += wraps;
      x = end - wraps * cols;
    }
    if (i === n) break;
    const b = bytes[i++];
    if (b === 13) x = 0;
    else if (b === 10) {
      advances++;
      if (x >= cols) x = cols - 1; // a line feed cancels a pending wrap
    } else return null;
  }
  return { x, advances };
}

/** One chunk of a plain run: its bytes, the line advances it makes, and the column before it. */
interface Piece {
  bytes: Uint8Array;
  advances: number;
  x: number;
}

/**
 * The host's copy of one terminal's screen (docs/ssh.md, "Catch-up"): xterm's own parser and buffer
 * (`@xterm/headless`, the same version as the window's `@xterm/xterm`) fed the session's output in
 * stream order. When a window falls behind a flood, the session stops sending it every byte and
 * sends pictures of this copy instead; `picture()` is what a window writes to show this state
 * exactly: back to defaults, then the screen (and scrollback) with its attributes and modes.
 *
 * Plain text (docs/ssh.md, "Plain runs"): output that is only printable ASCII, CR and LF, arriving
 * while the copy is between sequences with default attributes, is held unparsed as a *run*. Only
 * its last lines can still be on the screen or in the scrollback, so once a run has advanced more
 * lines than the buffer holds, its oldest chunks are dropped unparsed; the run is parsed when
 * anything else arrives or the whole state is needed (scrollback picture, resize). A screen picture
 * meanwhile comes from a scratch terminal fed the run's last lines. Whether a run may begin is read
 * through xterm's public API where it says it, else from its core (xterm-core.ts says which parts and why).
 */
export class TermMirror {
  private readonly term: Term;
  private readonly ser: InstanceType<typeof SerializeAddon>;
  private readonly core: Core | null;
  private readonly scrollback: number;
  private readonly extra = new Map<number, boolean>();
  /** One flag per chunk not yet parsed: does this copy answer the queries in it (the window never saw them)? */
  private readonly answers: boolean[] = [];
  private pendingBytes = 0;
  /** Plain text that came while the parser was busy (no run can begin before it is idle), in order. */
  private waiting: { chunk: Uint8Array; answer: boolean; parsed?: () => void }[] = [];
  private waitingBytes = 0;
  /** Resizes waiting for what was written before them: no run begins until they are done. */
  private resizing = 0;
  private disposed = false;
  /** The plain run not parsed yet; the cursor column after it; the copy's cursor row when it began. */
  private run: Piece[] = [];
  private runAdvances = 0;
  private runX = 0;
  private runY = 0;
  /**
   * The run last handed to the parser, until it is parsed: a screen picture meanwhile still comes
   * from its last lines (the copy's own screen shows what came before it, maybe megabytes earlier).
   */
  private parsingRun: Piece[] = [];
  /** Its first chunks were dropped: parsing it starts by putting the cursor in their last column. */
  private runCut = false;
  /** The copy's modes as the serializer writes them (a run cannot change them). */
  private runModes: string | null = null;
  private scratch: { term: Term; ser: InstanceType<typeof SerializeAddon>; core: Core } | null = null;
  /**
   * The normal screen's scroll margins may be other than the whole screen: followed through the
   * parser hooks, since DECSTBM is the one sequence that sets them (RIS, DECSTR on the normal screen,
   * a resize and a DECSTBM of the whole screen put them back).
   */
  private margins = false;
  /** The last byte handed to the parser was ASCII, so xterm's UTF-8 decoder holds no half character. */
  private utf8Whole = true;
  /** Why the plain-text path is off (null while it is on): `plain: false`, or what plainPathProblem found. */
  readonly plainPathOff: string | null;
  /** Bytes parsed since the last picture: nothing new, no picture needed. */
  changed = false;
  /** Bytes dropped from plain runs without being parsed, and screen pictures taken from the scratch terminal (tests, bench). */
  skipped = 0;
  plainPictures = 0;

  /**
   * `plain: false` parses every byte (the tests' reference). `log` hears once (per logger) that the
   * plain-text path is off because this xterm is not the one it was written for.
   */
  constructor(
    cols: number,
    rows: number,
    onAnswer: (data: string) => void,
    opts: { scrollback?: number; plain?: boolean; log?: Pick<Logger, 'warn'> } = {},
  ) {
    const scrollback = opts.scrollback ?? TERM_SCROLLBACK;
    this.term = new Terminal({ cols, rows, scrollback, allowProposedApi: true });
    this.scrollback = scrollback;
    this.ser = new SerializeAddon();
    this.term.loadAddon(this.ser);
    let off = opts.plain === false ? 'turned off (plain: false)' : plainPathProblem();
    const found = off ? null : coreOf(this.term);
    if (found && 'missing' in found) off = `xterm's core has no ${found.missing}`;
    this.core = found && 'core' in found ? found.core : null;
    this.plainPathOff = off;
    if (this.plainPathOff && opts.plain !== false && opts.log && !told.has(opts.log)) {
      told.add(opts.log);
      opts.log.warn('terminal copy: plain text is parsed byte by byte, catch-up of large floods is slower (docs/ssh.md, "Plain runs")', {
        why: this.plainPathOff,
      });
    }
    const mode = (on: boolean) => (params: (number | number[])[]) => {
      for (const p of params) if (typeof p === 'number' && (EXTRA_MODES as readonly number[]).includes(p)) this.extra.set(p, on);
      return false; // xterm's own handler runs too
    };
    this.term.parser.registerCsiHandler({ prefix: '?', final: 'h' }, mode(true));
    this.term.parser.registerCsiHandler({ prefix: '?', final: 'l' }, mode(false));
    this.term.parser.registerEscHandler({ final: 'c' }, () => (this.extra.clear(), (this.margins = false), false));
    // The normal screen's scroll margins (xterm's setScrollRegion and softReset, InputHandler.ts).
    this.term.parser.registerCsiHandler({ final: 'r' }, (params) => {
      if (this.term.buffer.active.type === 'normal') this.margins = marginsAfter(params, this.term.rows, this.margins);
      return false;
    });
    this.term.parser.registerCsiHandler({ intermediates: '!', final: 'p' }, () => {
      if (this.term.buffer.active.type === 'normal') this.margins = false;
      return false;
    });
    // Query answers (cursor position, device attributes): only for bytes the window did not parse.
    this.term.onData((d) => this.answers[0] && onAnswer(d));
  }

  /** Is the plain-text path available (xterm's core is the one it was written for)? */
  get plainPath(): boolean {
    return this.core !== null;
  }

  /** What plainState reads from the public API and the hooks, for the tests to check against the core. */
  get tracked(): { margins: boolean; utf8Whole: boolean } {
    return { margins: this.margins, utf8Whole: this.utf8Whole };
  }

  /** Bytes handed to the parser and not parsed yet, and plain text waiting for it to finish. */
  get pending(): number {
    return this.pendingBytes + this.waitingBytes;
  }

  /** Feeds output in stream order; `answer` when no window is shown these bytes; `parsed` once parsed. */
  write(chunk: Uint8Array, answer: boolean, parsed?: () => void): void {
    if (chunk.length) {
      if (this.run.length || (!this.waiting.length && this.startRun())) {
        if (this.addToRun(chunk)) return this.tookPlain(parsed);
      } else if (this.core && !this.resizing && this.pendingBytes > 0 && plainAdvance(chunk, 0, this.term.cols)) {
        // Plain text while the parser is busy with something else: it may begin a run once the
        // parser is done (settleWaiting), instead of queuing behind it for good.
        this.waiting.push({ chunk, answer, parsed });
        this.waitingBytes += chunk.length;
        return;
      }
    }
    this.fold();
    this.parse(chunk, answer, parsed);
  }

  /** Calls `fn` once everything written so far is parsed, before any later write is. */
  whenParsed(fn: () => void): void {
    this.fold();
    // a run begun between the last parse and this callback is parsed first
    this.parse(new Uint8Array(0), false, () => (this.run.length || this.waiting.length ? this.whenParsed(fn) : fn()));
  }

  /** What a window writes to show this state: the screen only (`scrollback: false`) or with its scrollback. */
  picture(scrollback: boolean): Buffer {
    if ((this.run.length || this.parsingRun.length) && !scrollback) {
      const pic = this.plainPicture();
      if (pic) return pic;
    }
    // A run shows once parsed (`changed` then); callers wanting all of it wait with whenParsed.
    this.fold();
    this.changed = false;
    return Buffer.from(RESET + this.ser.serialize(scrollback ? {} : { scrollback: 0 }) + this.extraModes(), 'utf8');
  }

  /**
   * Takes effect after what was written before it is parsed: output produced for the old size is
   * laid out at that size (a run parsed by then, its dropped chunks dropped for that size).
   */
  resize(cols: number, rows: number): void {
    this.fold();
    this.resizing++;
    this.parse(new Uint8Array(0), false, () => {
      this.resizing--;
      if (this.disposed) return;
      const was = { cols: this.term.cols, rows: this.term.rows };
      this.term.resize(cols, rows);
      // a resize puts both screens' margins back (xterm's Buffer.resize); the same size does nothing
      if (this.term.cols !== was.cols || this.term.rows !== was.rows) this.margins = false;
    });
  }

  dispose(): void {
    this.disposed = true;
    this.run = [];
    this.parsingRun = [];
    this.waiting = [];
    this.scratch?.term.dispose();
    this.term.dispose();
  }

  private parse(chunk: Uint8Array, answer: boolean, parsed?: () => void): void {
    if (chunk.length) this.utf8Whole = chunk[chunk.length - 1]! < 0x80;
    this.pendingBytes += chunk.length;
    this.answers.push(answer);
    this.term.write(chunk, () => {
      this.answers.shift();
      this.pendingBytes -= chunk.length;
      this.changed = true;
      parsed?.();
      if (this.pendingBytes === 0 && this.waiting.length && !this.disposed) this.settleWaiting();
    });
  }

  private tookPlain(parsed?: () => void): void {
    this.changed = true;
    if (parsed) queueMicrotask(parsed);
  }

  /** The parser is idle: the plain text that waited begins a run if the copy's state allows, else is parsed. */
  private settleWaiting(): void {
    const waiting = this.waiting;
    this.waiting = [];
    this.waitingBytes = 0;
    const run = this.startRun();
    for (const w of waiting) {
      if (run && this.addToRun(w.chunk)) this.tookPlain(w.parsed);
      else this.parse(w.chunk, w.answer, w.parsed);
    }
  }

  private extraModes(): string {
    let modes = '';
    for (const [m, on] of this.extra) if (on !== (m === 25)) modes += `\x1b[?${m}${on ? 'h' : 'l'}`;
    return modes;
  }

  /**
   * Takes `chunk` into the run (begun by startRun) if it is plain text. Then drops the run's oldest
   * chunks while the rest still advances more lines than the buffer holds (rows + scrollback), from
   * the row the run began on: the dropped chunks' lines would have scrolled out, parsed or not.
   */
  private addToRun(chunk: Uint8Array): boolean {
    const after = plainAdvance(chunk, this.runX, this.term.cols);
    if (!after) return false;
    this.run.push({ bytes: chunk, advances: after.advances, x: this.runX });
    this.runAdvances += after.advances;
    this.runX = after.x;
    const { rows } = this.term;
    const keep = rows + this.scrollback + 1 + (rows - 1 - this.runY);
    while (this.run.length > 1 && this.runAdvances - this.run[0]!.advances >= keep) {
      const dropped = this.run.shift()!;
      this.runAdvances -= dropped.advances;
      this.skipped += dropped.bytes.length;
      this.runCut = true;
    }
    return true;
  }

  /**
   * Where the copy's cursor is, if its state can begin a run: it has parsed all it was handed, is
   * between sequences, on the normal screen with no margins, auto-wrap on, insert off, default
   * attributes and character set (plain text changes none of these). Null otherwise.
   */
  private plainState(): { x: number; y: number } | null {
    const c = this.core;
    if (!c || this.resizing || this.pendingBytes > 0) return null;
    const ih = c._inputHandler;
    const b = this.term.buffer.active;
    const m = this.term.modes;
    const ok =
      ih._parser.currentState === 0 &&
      this.utf8Whole &&
      ih._curAttrData.fg === 0 &&
      ih._curAttrData.bg === 0 &&
      b.type === 'normal' &&
      !this.margins &&
      m.wraparoundMode &&
      !m.insertMode &&
      c._charsetService.charset === undefined;
    // cursorX is xterm's own column: `cols` while a wrap is pending, as plainAdvance counts it
    return ok ? { x: b.cursorX, y: b.cursorY } : null;
  }

  private startRun(): boolean {
    const at = this.plainState();
    if (!at) return false;
    this.runX = at.x;
    this.runY = at.y;
    this.runAdvances = 0;
    this.runCut = false;
    this.runModes = null;
    return true;
  }

  /**
   * Hands the parser what waits and the run (from the last dropped chunk's column if any were
   * dropped); once it has parsed them the copy is exact again.
   */
  private fold(): void {
    const waiting = this.waiting;
    this.waiting = [];
    this.waitingBytes = 0;
    for (const w of waiting) this.parse(w.chunk, w.answer, w.parsed);
    const run = this.run;
    if (!run.length) return;
    const parts = run.map((p) => p.bytes);
    if (this.runCut) parts.unshift(Buffer.from('\r' + ' '.repeat(run[0]!.x), 'latin1'));
    this.run = [];
    this.parsingRun = run;
    this.parse(Buffer.concat(parts), false, () => this.parsingRun === run && (this.parsingRun = []));
  }

  /**
   * The screen after the run, without parsing it: if its last chunks advance at least twice the
   * screen's height, every line on the screen began inside them, so a scratch terminal of the
   * screen's size with no scrollback, fed only those chunks from the same column, shows the same
   * screen and cursor. The copy's modes (unchanged by plain text) follow. Null if the run is shorter.
   */
  private plainPicture(): Buffer | null {
    const { cols, rows } = this.term;
    const run = this.run.length ? this.run : this.parsingRun;
    let i = run.length;
    let advances = 0;
    while (i > 0 && advances <= 2 * rows) advances += run[--i]!.advances;
    if (advances <= 2 * rows) return null;
    let s = this.scratch;
    if (!s || s.term.cols !== cols || s.term.rows !== rows) {
      s?.term.dispose();
      const term = new Terminal({ cols, rows, scrollback: 0, allowProposedApi: true, logLevel: 'off' });
      const ser = new SerializeAddon();
      term.loadAddon(ser);
      const found = coreOf(term);
      if (!('core' in found)) return (term.dispose(), null);
      s = this.scratch = { term, ser, core: found.core };
    }
    s.term.reset();
    s.core.writeSync(Buffer.from(' '.repeat(run[i]!.x), 'latin1'));
    for (; i < run.length; i++) s.core.writeSync(run[i]!.bytes);
    if (this.runModes === null) {
      const all = this.ser.serialize({ scrollback: 0 });
      const content = this.ser.serialize({ scrollback: 0, excludeModes: true });
      this.runModes = all.startsWith(content) ? all.slice(content.length) : '';
    }
    this.changed = false;
    this.plainPictures++;
    return Buffer.from(RESET + s.ser.serialize({ scrollback: 0, excludeModes: true }) + this.runModes + this.extraModes(), 'utf8');
  }
}
