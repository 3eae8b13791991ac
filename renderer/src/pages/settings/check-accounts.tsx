import { useState } from 'react';
import type { DoctorReport } from '../../../../shared/contract/doctor';
import { DOCTOR_WORDS } from '../../../../shared/contract/values';
import { api, errorText } from '../../api';

const CLASS = { confirmed: 'ok', contradicted: 'error', unknown: 'muted' } as const;

/**
 * Settings → Check my accounts (`doctor.run`, the same as `povdesk doctor`): each thing POV Desk
 * assumes about the accounts it holds, read once and read-only, with what was seen; and the
 * support bundle (`doctor.bundle`), whose path is shown to send.
 */
export default function CheckAccounts() {
  const [busy, setBusy] = useState<'run' | 'bundle' | null>(null);
  const [report, setReport] = useState<DoctorReport | null>(null);
  const [bundle, setBundle] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function go(what: 'run' | 'bundle') {
    setBusy(what);
    setError(null);
    try {
      if (what === 'run') setReport(await api.call('doctor.run', {}));
      else {
        const b = await api.call('doctor.bundle', {});
        setReport(b.report);
        setBundle(b.path);
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="panel" data-testid="check-accounts">
      <h3>Check my accounts</h3>
      <p className="muted small">
        Reads Skytap, each POV's BeyondTrust tenants, a remote vm-manager and the control plane, and changes nothing there.
      </p>
      <div className="row">
        <button onClick={() => void go('run')} disabled={busy !== null}>
          {busy === 'run' ? 'Checking…' : 'Check my accounts'}
        </button>
        <button onClick={() => void go('bundle')} disabled={busy !== null}>
          {busy === 'bundle' ? 'Writing…' : 'Save support bundle'}
        </button>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {bundle && (
        <p role="status">
          Support bundle (no secrets in it): <code data-testid="bundle-path">{bundle}</code>
        </p>
      )}
      {report && (
        <>
          <p role="status">
            {report.counts.confirmed} confirmed, {report.counts.contradicted} contradicted, {report.counts.unknown} could not tell
          </p>
          <ul className="doctor-checks">
            {report.checks.map((c, i) => (
              <li key={`${c.id}-${i}`} data-result={c.result}>
                <strong className={CLASS[c.result]}>{DOCTOR_WORDS[c.result]}</strong> {c.assumption}{' '}
                <span className="muted small">
                  ({c.subject}; {c.doc})
                </span>
                <br />
                <span className="small">{c.seen}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
