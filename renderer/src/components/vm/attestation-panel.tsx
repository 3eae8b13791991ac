import { useEffect, useState } from 'react';
import type { VmAttestation } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';

const short = (h: string | null) => (h ? `${h.slice(0, 12)}…${h.slice(-4)}` : '–');

/**
 * Stage verdicts, the event-log check (images with reference measurements: how many events were
 * compared and allowed, and the event that did not pass, with its type, PCR, what was expected and
 * what was seen) and the PCR table (value, expected: the log's replay or the golden value, match).
 */
export function AttestationPanel({ id, version }: { id: string; version: string }) {
  const [att, setAtt] = useState<VmAttestation | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    api
      .call('vm.attestation', { id })
      .then((a) => live && (setAtt(a), setError(null)))
      .catch((e) => live && setError(errorText(e)));
    return () => {
      live = false;
    };
  }, [id, version]);

  if (error) return <p className="error">{error}</p>;
  if (!att) return <p className="muted">Loading attestation…</p>;
  return (
    <div className="vm-attest" aria-label="Attestation">
      <p>
        {att.required ? 'Attestation required' : 'Attestation not required'}; user-data{' '}
        <strong className={att.userDataReleased ? 'ok' : 'warn'}>{att.userDataReleased ? 'released' : 'withheld'}</strong>
        {att.akFingerprint && <span className="muted small"> · AK {short(att.akFingerprint)}</span>}
      </p>
      {att.stages.length === 0 && <p className="muted">No quote yet: the guest has not quoted in this boot.</p>}
      {att.stages.map((s) => (
        <div key={s.stage} className="vm-stage">
          <h4>
            Stage {s.stage}: <span className={`badge ${s.verified ? 'ok' : 'error'}`}>{s.verified ? 'verified' : 'not verified'}</span>
          </h4>
          <p className={s.verified ? 'muted small' : 'error small'}>{s.message}</p>
          {s.events && (
            <p className="small" aria-label={`Event log, stage ${s.stage}`}>
              Event log: {s.events.count} events, {s.events.checked} checked against the image&apos;s reference measurements,{' '}
              {s.events.allowed} allowed by type
              {s.events.mismatch === null && <span className="ok"> · all match</span>}
            </p>
          )}
          {s.events?.mismatch && (
            <dl className="vm-event-mismatch error small" aria-label={`Mismatched event, stage ${s.stage}`}>
              <dt>Event</dt>
              <dd>
                #{s.events.mismatch.event} {s.events.mismatch.type}, PCR {s.events.mismatch.pcr}
              </dd>
              <dt>What</dt>
              <dd>{s.events.mismatch.what}</dd>
              <dt>Expected</dt>
              <dd>
                <code>{s.events.mismatch.expected}</code>
              </dd>
              <dt>Seen</dt>
              <dd>
                <code>{s.events.mismatch.seen}</code>
              </dd>
            </dl>
          )}
          <table className="table vm-pcrs">
            <thead>
              <tr>
                <th>PCR</th>
                <th>Value</th>
                <th>Expected</th>
                <th>Match</th>
              </tr>
            </thead>
            <tbody>
              {s.pcrs.map((p) => (
                <tr key={p.index}>
                  <td>{p.index}</td>
                  <td>
                    <code title={p.value}>{short(p.value)}</code>
                  </td>
                  <td>
                    <code title={p.golden ?? ''}>{short(p.golden)}</code>
                  </td>
                  <td title={p.note ?? ''}>
                    {p.match === true && <span className="ok">match</span>}
                    {p.match === false && <span className="error">mismatch</span>}
                    {p.match === null && <span className="muted small">{p.note ?? 'not compared'}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  );
}
