import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import { park, termFor, useTerminals } from '../../state/terminals';
import './terminal.css';

/**
 * Shows the session's xterm (kept alive in the terminals store) inside this component while it is
 * mounted, fitting it to the space; unmounting parks it off-screen, so navigating away keeps the
 * session, its scrollback and its flow of bytes.
 */
export function TerminalView({ sessionId }: { sessionId: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [query, setQuery] = useState('');
  const [searching, setSearching] = useState(false);
  const entry = termFor(sessionId);
  const drawing = useTerminals((s) => s.renderers[sessionId]);

  useEffect(() => {
    const host = box.current;
    const e = termFor(sessionId);
    if (!host || !e) return;
    host.appendChild(e.el);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const fit = () => {
      if (host.clientWidth > 0 && host.clientHeight > 0) e.fit.fit();
    };
    fit();
    e.term.focus();
    // Resizing fires many times while dragging: fit at most every 80 ms (each fit may send ssh.resize).
    const ro = new ResizeObserver(() => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        fit();
      }, 80);
    });
    ro.observe(host);
    return () => {
      ro.disconnect();
      if (timer) clearTimeout(timer);
      park(e.el);
    };
  }, [sessionId]);

  if (!entry) return <div className="term-missing">This terminal is no longer open.</div>;
  const find = (back: boolean) => {
    if (!query) return;
    const opts = { caseSensitive: false, decorations: { matchOverviewRuler: '#888', activeMatchColorOverviewRuler: '#f80' } };
    if (back) entry.search.findPrevious(query, opts);
    else entry.search.findNext(query, opts);
  };
  return (
    <div className="term-wrap">
      <div className="term-tools">
        <button
          title="Copy the selection (Ctrl+Shift+C)"
          onClick={() => entry.term.hasSelection() && void navigator.clipboard?.writeText(entry.term.getSelection())}
        >
          Copy
        </button>
        <button
          title="Paste (Ctrl+Shift+V)"
          onClick={() =>
            void navigator.clipboard?.readText().then(
              (t) => entry.term.paste(t),
              () => undefined,
            )
          }
        >
          Paste
        </button>
        <button onClick={() => setSearching((v) => !v)} aria-pressed={searching}>
          Search
        </button>
        {searching && (
          <span className="term-search">
            <input
              aria-label="Search the terminal"
              value={query}
              autoFocus
              onChange={(e) => setQuery(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter') find(e.shiftKey);
                if (e.key === 'Escape') {
                  setSearching(false);
                  entry.search.clearDecorations();
                  entry.term.focus();
                }
              }}
            />
            <button onClick={() => find(true)}>Prev</button>
            <button onClick={() => find(false)}>Next</button>
          </span>
        )}
        <button onClick={() => entry.term.clear()}>Clear</button>
        {drawing && (
          <span className="muted term-drawing" data-testid="term-renderer" title={drawing.why}>
            {drawing.kind === 'webgl' ? 'GPU (WebGL)' : 'DOM'}
          </span>
        )}
      </div>
      <div className="term-box" ref={box} data-testid={`terminal-${sessionId}`} />
    </div>
  );
}
