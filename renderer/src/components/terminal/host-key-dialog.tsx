import { useState } from 'react';
import type { HostKeyPrompt } from '../../../../shared/contract/ssh';
import { errorText } from '../../api';
import { useTerminals } from '../../state/terminals';
import { ModalDialog } from '../modal-dialog';
import { ErrorAlert } from '../error-alert';
import './terminal.css';

/**
 * Asks about a host key. The connection waits — nothing is sent to log in — until this is answered.
 * A modal: focus stays inside, Escape refuses (the safe answer), and focus goes back to the opener.
 */
export function HostKeyDialog({ prompt }: { prompt: HostKeyPrompt }) {
  const answer = useTerminals((s) => s.answer);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const go = (accept: boolean, replace?: boolean) => {
    setBusy(true);
    answer(prompt, accept, replace)
      .catch((e) => setError(errorText(e)))
      .finally(() => setBusy(false));
  };
  const refuse = () => {
    if (!busy) go(false);
  };
  const where = `${prompt.host}${prompt.port === 22 ? '' : ':' + prompt.port}`;
  return (
    <ModalDialog onCancel={refuse} className={`hostkey-dialog ${prompt.kind}`} aria-labelledby={`hk-${prompt.promptId}`}>
      {prompt.kind === 'first' ? (
        <>
          <h3 id={`hk-${prompt.promptId}`}>First connection to {where}</h3>
          <p>
            The server identifies itself with this {prompt.keyType} key. Compare the fingerprint with the one the server's owner gives you (
            <code>ssh-keygen -lf /etc/ssh/ssh_host_{prompt.keyType.replace(/^ssh-/, '')}_key.pub</code> on the server).
          </p>
          <p className="fingerprint mono" data-testid="hostkey-fingerprint">
            {prompt.fingerprint}
          </p>
          <div className="actions">
            <button className="primary" disabled={busy} onClick={() => go(true)}>
              Trust and connect
            </button>
            <button disabled={busy} onClick={() => go(false)}>
              Refuse
            </button>
          </div>
        </>
      ) : (
        <>
          <h3 id={`hk-${prompt.promptId}`} className="danger-text">
            The host key of {where} has CHANGED
          </h3>
          <p>
            Someone may be intercepting this connection, or the server was reinstalled. The connection is held; nothing has been sent to log
            in.
          </p>
          <dl className="fingerprints mono">
            {prompt.stored?.source ? (
              <dt data-testid="hostkey-source">
                In OpenSSH&apos;s {prompt.stored.source} ({prompt.stored.keyType}; POV Desk keeps its own list and never changes that file)
              </dt>
            ) : (
              <dt>
                Stored ({prompt.stored?.keyType}, since {prompt.stored ? new Date(prompt.stored.addedAt).toLocaleString() : '?'})
              </dt>
            )}
            <dd data-testid="hostkey-stored">{prompt.stored?.fingerprint}</dd>
            <dt>Presented now ({prompt.keyType})</dt>
            <dd data-testid="hostkey-fingerprint">{prompt.fingerprint}</dd>
          </dl>
          <div className="actions">
            <button className="primary" disabled={busy} onClick={() => go(false)}>
              Refuse (recommended)
            </button>
            <button className="danger" disabled={busy} onClick={() => go(true, true)}>
              Replace the stored key and connect
            </button>
          </div>
        </>
      )}
      <ErrorAlert error={error} />
    </ModalDialog>
  );
}
