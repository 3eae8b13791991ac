import '@xterm/xterm/css/xterm.css';
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'react';
import type { VmConsoleChunk } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { ackConsole, subscribeConsole } from '../../state/vms';

/**
 * The VM's serial console, followed live in a read-only xterm. The stream is subscribed first,
 * then vm.consoleFollow returns the tail it continues from; chunks that arrive before that tail is
 * written wait, so nothing is shown out of order. Bytes are acknowledged once xterm parsed them.
 */
export function ConsoleTail({ id }: { id: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [bytes, setBytes] = useState(0);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const term = new Terminal({ convertEol: true, disableStdin: true, scrollback: 5000, fontSize: 12, cursorBlink: false });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    try {
      fit.fit();
    } catch {
      // not laid out yet
    }
    let ready = false;
    let closed = false;
    const early: [VmConsoleChunk, number][] = [];
    const write = (c: VmConsoleChunk, n: number) => {
      if (c.reset) term.reset();
      term.write(c.text, () => {
        ackConsole(id, n);
        if (!closed) setBytes((b) => b + n);
      });
    };
    const stop = subscribeConsole(id, (c, n) => (ready ? write(c, n) : early.push([c, n])));
    api
      .call('vm.consoleFollow', { id, lines: 500 })
      .then(({ text }) => {
        if (closed) return;
        if (text) term.write(text);
        ready = true;
        for (const [c, n] of early.splice(0)) write(c, n);
        setError(null);
      })
      .catch((e) => setError(errorText(e)));
    const onResize = () => {
      try {
        fit.fit();
      } catch {
        // hidden
      }
    };
    window.addEventListener('resize', onResize);
    return () => {
      closed = true;
      window.removeEventListener('resize', onResize);
      stop();
      term.dispose();
    };
  }, [id]);

  return (
    <div className="vm-console" aria-label="Console">
      {error && <p className="error">{error}</p>}
      <div ref={host} className="vm-console-term" data-testid="vm-console" data-bytes={bytes} />
    </div>
  );
}
