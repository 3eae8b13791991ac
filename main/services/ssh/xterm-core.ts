import headless from '@xterm/headless';

// What the host's copy of a terminal screen (mirror.ts, docs/ssh.md "Plain runs") takes from
// xterm's private core, why, and the check that the installed xterm still means it.

const { Terminal } = headless;
type Term = InstanceType<typeof Terminal>;

/**
 * What the plain-text path still takes from xterm's core (6.0; the packages are pinned exactly in
 * package.json), each because neither the public API nor the parser hooks give it:
 * - `_inputHandler._parser.currentState`: whether the parser is between sequences. Hooks fire only
 *   when a sequence completes with a registered identifier; a sequence that is cut off, ignored or
 *   still open (an OSC string, a CSI waiting for its final byte) calls none.
 * - `_inputHandler._curAttrData`: the attributes the next character is printed with. Set by SGR (with
 *   its sub-parameter grammar), restored by DECRC, CSI u and modes 1048/1049, changed by OSC 8 links
 *   and DECSCA: following them through hooks would be a second copy of xterm's semantics that goes
 *   wrong, not slow, when xterm changes.
 * - `_charsetService.charset`: the character set plain text is mapped through. SO and SI (C0
 *   controls) switch it, and the public parser API has no hook for C0 controls.
 * - `writeSync`: the scratch terminal's screen is needed at once (a screen picture is taken in the
 *   callback that learns the window parsed the last one); `Terminal.write` parses on a timer.
 * The rest comes through the public API: the cursor (`buffer.active.cursorX/Y`), the screen in use
 * and the modes (`buffer.active.type`, `modes`), the scroll margins (DECSTBM, DECSTR and RIS hooks,
 * see TermMirror), and the UTF-8 decoder holding half a character (the last byte parsed is ≥ 0x80).
 */
export interface Core {
  _inputHandler: { _parser: { currentState: number }; _curAttrData: { fg: number; bg: number } };
  _charsetService: { charset: unknown; glevel: number };
  writeSync(data: Uint8Array): void;
}

/** The core's private parts the path reads, or which one is missing (a release renamed it). */
export function coreOf(term: Term): { core: Core } | { missing: string } {
  const c = (term as unknown as { _core?: Record<string, unknown> })._core as Partial<Core> | undefined;
  const ih = c?._inputHandler;
  if (typeof ih?._parser?.currentState !== 'number') return { missing: '_core._inputHandler._parser.currentState' };
  if (typeof ih._curAttrData?.fg !== 'number' || typeof ih._curAttrData.bg !== 'number')
    return { missing: '_core._inputHandler._curAttrData' };
  if (typeof c?._charsetService?.glevel !== 'number') return { missing: '_core._charsetService' };
  if (typeof c.writeSync !== 'function') return { missing: '_core.writeSync' };
  return { core: c as Core };
}

/**
 * Why the plain-text path cannot run with this xterm, or null: the private parts must be there and
 * still mean what they meant in 6.0, so a throwaway terminal is fed sequences that move each one
 * and back (~1 ms, once per copy). A release that renames or repurposes one turns the path off:
 * every byte is parsed as before, correct but slower, and the host's log says so once.
 */
export function plainPathProblem(): string | null {
  const term = new Terminal({ cols: 10, rows: 2, scrollback: 0, allowProposedApi: true, logLevel: 'off' });
  try {
    const found = coreOf(term);
    if ('missing' in found) return `xterm's core has no ${found.missing}`;
    const { _inputHandler: ih, _charsetService: cs } = found.core;
    const write = (s: string) => found.core.writeSync(Buffer.from(s, 'latin1'));
    const idle = () => ih._parser.currentState === 0;
    const plain = () => ih._curAttrData.fg === 0 && ih._curAttrData.bg === 0;
    const checks: [string, () => boolean][] = [
      ['a fresh terminal reads as idle, default attributes and character set', () => idle() && plain() && cs.charset === undefined],
      ['an open CSI reads as not idle', () => (write('\x1b['), !idle())],
      ['its final byte reads as idle', () => (write('m'), idle())],
      ['bold on blue reads as non-default attributes', () => (write('\x1b[1;44m'), ih._curAttrData.fg !== 0 && ih._curAttrData.bg !== 0)],
      ['SGR 0 reads as default attributes', () => (write('\x1b[0m'), plain())],
      ['DEC graphics in G0 reads as a character set', () => (write('\x1b(0'), cs.charset !== undefined)],
      ['ASCII in G0 reads as none', () => (write('\x1b(B'), cs.charset === undefined)],
      ['writeSync parses at once', () => (write('\r\nabc'), term.buffer.active.cursorX === 3 && term.buffer.active.cursorY === 1)],
    ];
    const failed = checks.find(([, ok]) => !ok());
    return failed ? `xterm's core no longer behaves as 6.0's: ${failed[0]} failed` : null;
  } catch (e) {
    return `xterm's core could not be read: ${(e as Error).message}`;
  } finally {
    term.dispose();
  }
}
