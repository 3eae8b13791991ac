import type { SshStatus } from '../../../../shared/contract/ssh';

/** A session's state in words, with why it closed or when it retries. */
export function statusText(s: SshStatus | null): string {
  if (!s) return 'starting';
  if (s.state === 'closed') {
    const by = { user: 'closed by you', dropped: 'connection dropped', exited: 'shell exited', refused: 'refused', failed: 'failed' }[
      s.closedBy ?? 'failed'
    ];
    return s.reason && s.reason !== by ? `${by}: ${s.reason}` : by;
  }
  if (s.state === 'reconnecting')
    return (
      `connection dropped${s.reason ? ` (${s.reason})` : ''}; ` +
      `reconnecting${s.nextRetryMs ? ` in ${Math.round(s.nextRetryMs / 1000)} s` : ''} (attempt ${s.attempt})`
    );
  return s.state;
}

/** The first size of a new session's terminal; the tab's xterm is fitted to the page later. */
export const initialSize = () => ({ cols: 100, rows: 30 });

/** A session that closed (refused or failed) before it was ever open: why, for the form that opened it. */
export function connectFailure(s: SshStatus | null): string | null {
  if (!s || s.state !== 'closed' || (s.closedBy !== 'failed' && s.closedBy !== 'refused')) return null;
  return `Could not connect: ${statusText(s)}`;
}
