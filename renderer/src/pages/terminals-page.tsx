import { useEffect, useState } from 'react';
import { errorText } from '../api';
import { HostKeyDialog } from '../components/terminal/host-key-dialog';
import { KnownHosts } from '../components/terminal/known-hosts';
import { Profiles } from '../components/terminal/profiles';
import { QuickConnect } from '../components/terminal/quick-connect';
import { statusText } from '../components/terminal/session-status';
import { TerminalView } from '../components/terminal/terminal-view';
import { TypeIntoPanel } from '../components/terminal/type-into-panel';
import { termFor, useTerminals } from '../state/terminals';
import { ErrorAlert } from '../components/error-alert';
import { useVms } from '../state/vms';
import './terminals.css';

export default function TerminalsPage() {
  const { tabs, active, prompts, error, select, close, reconnect, follow } = useTerminals();
  const [typeError, setTypeError] = useState<string | null>(null);
  const [typing, setTyping] = useState<false | 'script' | 'runner'>(false);
  useEffect(() => follow(), [follow]);
  const current = tabs.find((t) => t.sessionId === active) ?? null;
  // a local VM's console whose VM is gone: nothing to reconnect to
  const vms = useVms((s) => s.vms);
  const closed = current?.status?.state === 'closed';
  useEffect(() => {
    if (closed && current?.vmId) void useVms.getState().refresh();
  }, [closed, current?.vmId]);
  const vmGone = !!current?.vmId && vms !== null && !vms.some((v) => v.id === current.vmId);
  return (
    <section className="page terminals-page">
      <header className="page-head">
        <h2>Terminals</h2>
      </header>
      <ErrorAlert error={error} />
      {tabs.length > 0 && (
        <div className="term-tabs" role="tablist">
          {tabs.map((t) => (
            <div
              key={t.sessionId}
              className={`term-tab ${t.sessionId === active ? 'active' : ''} state-${t.status?.state ?? 'connecting'}`}
            >
              <button role="tab" aria-selected={t.sessionId === active} onClick={() => select(t.sessionId)}>
                {t.title}
              </button>
              <button className="link" aria-label={`Close ${t.title}`} onClick={() => void close(t.sessionId)}>
                ×
              </button>
            </div>
          ))}
        </div>
      )}
      {current && (
        <div className="term-panel">
          <div className="term-status" data-testid="term-status">
            <span className={`badge state-${current.status?.state ?? 'connecting'}`}>{statusText(current.status)}</span>
            {(current.status?.state === 'closed' || current.status?.state === 'reconnecting') &&
              current.status.closedBy !== 'user' &&
              !vmGone && <button onClick={() => reconnect(current.sessionId).catch((e) => setTypeError(errorText(e)))}>Reconnect</button>}
            {closed && vmGone && <span className="muted">the VM was destroyed: close this tab</span>}
            {current.signedIn && current.status?.state === 'open' && <span className="muted">{current.signedIn}</span>}
            {(current.readOnly || current.status?.interactive === false) && (
              <span className="muted" title="A live tail of the VM's console log; open the interactive console to type">
                read-only
              </span>
            )}
            {!current.readOnly && current.status?.interactive !== false && (
              <>
                <button onClick={() => setTyping((v) => (v === 'script' ? false : 'script'))} aria-pressed={typing === 'script'}>
                  Type script…
                </button>
                <button
                  onClick={() => setTyping('runner')}
                  title="Types the template runner (Templates page) line by line, then compares sha256sum on the other side"
                >
                  Type runner script
                </button>
              </>
            )}
            {typeError && <span className="error">{typeError}</span>}
          </div>
          {typing && (
            <TypeIntoPanel
              key={`${current.sessionId}-${typing}`}
              sessionId={current.sessionId}
              runner={typing === 'runner'}
              onClose={() => setTyping(false)}
            />
          )}
          {termFor(current.sessionId) && <TerminalView key={current.sessionId} sessionId={current.sessionId} />}
        </div>
      )}
      {tabs.length === 0 && <p className="muted">No terminals open. Connect below or from a profile.</p>}
      <div className="ssh-columns">
        <QuickConnect />
        <Profiles />
      </div>
      <KnownHosts />
      {prompts[0] && <HostKeyDialog key={prompts[0].promptId} prompt={prompts[0]} />}
    </section>
  );
}
