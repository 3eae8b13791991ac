import headless from '@xterm/headless';
import serialize from '@xterm/addon-serialize';
import { TERM_SCROLLBACK } from '../../../shared/contract/ssh';

const { Terminal } = headless;
const { SerializeAddon } = serialize;

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

/**
 * The host's copy of one terminal's screen (docs/ssh.md, "Catch-up"): xterm's own parser and buffer
 * (`@xterm/headless`, the same version as the window's `@xterm/xterm`) fed the session's output in
 * stream order. When a window falls behind a flood, the session stops sending it every byte and
 * sends pictures of this copy instead; `picture()` is what a window writes to show this state
 * exactly: back to defaults, then the screen (and scrollback) with its attributes and modes.
 */
export class TermMirror {
  private readonly term: InstanceType<typeof Terminal>;
  private readonly ser: InstanceType<typeof SerializeAddon>;
  private readonly extra = new Map<number, boolean>();
  /** One flag per chunk not yet parsed: does this copy answer the queries in it (the window never saw them)? */
  private readonly answers: boolean[] = [];
  private pendingBytes = 0;
  /** Bytes parsed since the last picture: nothing new, no picture needed. */
  changed = false;

  constructor(cols: number, rows: number, onAnswer: (data: string) => void) {
    this.term = new Terminal({ cols, rows, scrollback: TERM_SCROLLBACK, allowProposedApi: true });
    this.ser = new SerializeAddon();
    this.term.loadAddon(this.ser);
    const mode = (on: boolean) => (params: (number | number[])[]) => {
      for (const p of params) if (typeof p === 'number' && (EXTRA_MODES as readonly number[]).includes(p)) this.extra.set(p, on);
      return false; // xterm's own handler runs too
    };
    this.term.parser.registerCsiHandler({ prefix: '?', final: 'h' }, mode(true));
    this.term.parser.registerCsiHandler({ prefix: '?', final: 'l' }, mode(false));
    this.term.parser.registerEscHandler({ final: 'c' }, () => (this.extra.clear(), false));
    // Query answers (cursor position, device attributes): only for bytes the window did not parse.
    this.term.onData((d) => this.answers[0] && onAnswer(d));
  }

  /** Bytes handed to the parser and not parsed yet. */
  get pending(): number {
    return this.pendingBytes;
  }

  /** Feeds output in stream order; `answer` when no window is shown these bytes; `parsed` once parsed. */
  write(chunk: Uint8Array, answer: boolean, parsed?: () => void): void {
    this.pendingBytes += chunk.length;
    this.answers.push(answer);
    this.term.write(chunk, () => {
      this.answers.shift();
      this.pendingBytes -= chunk.length;
      this.changed = true;
      parsed?.();
    });
  }

  /** Calls `fn` once everything written so far is parsed, before any later write is. */
  whenParsed(fn: () => void): void {
    this.write(new Uint8Array(0), false, fn);
  }

  /** What a window writes to show this state: the screen only (`scrollback: false`) or with its scrollback. */
  picture(scrollback: boolean): Buffer {
    this.changed = false;
    let modes = '';
    for (const [m, on] of this.extra) if (on !== (m === 25)) modes += `\x1b[?${m}${on ? 'h' : 'l'}`;
    return Buffer.from(RESET + this.ser.serialize(scrollback ? {} : { scrollback: 0 }) + modes, 'utf8');
  }

  resize(cols: number, rows: number): void {
    this.term.resize(cols, rows);
  }

  dispose(): void {
    this.term.dispose();
  }
}
