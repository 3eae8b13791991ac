import { useCallback, useEffect, useState } from 'react';
import type { Result } from '../../../../shared/contract';
import { api, errorText } from '../../api';
import { isActive, useJobs } from '../../state/jobs';
import { GatewaySettings } from './gateway-settings';
import { TenantsForm } from './tenants-form';
import { ErrorAlert } from '../error-alert';

type Status = Result<'pam.status'>;
type Item = Status['jumpGroup'];

const CLASS: Record<Item['state'], string> = { done: 'ok', waiting: 'warn', pending: 'muted', skipped: 'muted', failed: 'bad' };

function State({ item, label }: { item: Item; label?: string }) {
  return (
    <span>
      <span className={`badge ${CLASS[item.state]}`}>{label ?? item.state}</span>
      {item.detail && <span className="small muted"> {item.detail}</span>}
      {item.error && <div className="small error">{item.error}</div>}
    </span>
  );
}

/**
 * The POV's Access panel: the POV Gateway, the Resource Broker, Entitle and one row per VM with
 * its jump item, Password Safe system and Entitle state, each with its error and a Retry (a Wire
 * run: every step finds what exists before it creates anything).
 */
export function AccessPanel({ povId }: { povId: string }) {
  const [st, setSt] = useState<Status | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  const follow = useJobs((s) => s.follow);
  const job = useJobs((s) => (jobId ? s.jobs[jobId] : undefined));

  const load = useCallback(() => {
    api
      .call('pam.status', { povId })
      .then((s) => {
        setSt(s);
        if (s.jobId) setJobId(s.jobId);
      })
      .catch((e) => setError(errorText(e)));
  }, [povId]);

  useEffect(() => follow(), [follow]);
  useEffect(load, [load]);
  const running = job ? isActive(job) : false;
  useEffect(() => {
    if (job) load();
  }, [job?.state, job?.progress.step, load]); // eslint-disable-line react-hooks/exhaustive-deps

  const run = async (method: 'pam.wire' | 'pam.unwire') => {
    setError(null);
    try {
      setJobId((await api.call(method, { povId })).jobId);
    } catch (e) {
      setError(errorText(e));
    }
  };

  if (!st) return error ? <p className="error">{error}</p> : <p className="muted">Loading access…</p>;
  const retry = (
    <button className="link small" disabled={running} onClick={() => void run('pam.wire')}>
      Retry
    </button>
  );
  const failed = (i: Item) => i.state === 'failed' || i.state === 'waiting';
  return (
    <section aria-label="Access">
      <div className="panel">
        <h3>Access (BeyondTrust)</h3>
        <p>
          <button disabled={running} onClick={() => void run('pam.wire')}>
            Wire
          </button>{' '}
          <button disabled={running} onClick={() => void run('pam.unwire')}>
            Unwire
          </button>{' '}
          {job && (
            <span className="small muted" aria-label="wiring job">
              {job.title}: {job.state}
              {running ? ` — ${job.progress.step}` : ''}
              {job.error ? ` — ${job.error.message}` : ''}
            </span>
          )}
        </p>
        <ErrorAlert error={error} />
        <dl className="facts">
          <dt>POV Gateway</dt>
          <dd aria-label="POV Gateway">
            <State item={st.gateway} label={st.gateway.connected ? 'connected' : st.gateway.state} />
            {st.gateway.node && <span className="small"> node {st.gateway.node}</span>} {failed(st.gateway) && retry}
          </dd>
          <dt>Jumpoint container</dt>
          <dd>
            <State item={st.container} /> {failed(st.container) && retry}
          </dd>
          <dt>Jump group</dt>
          <dd>
            <State item={st.jumpGroup} /> {failed(st.jumpGroup) && retry}
          </dd>
          <dt>Password Safe workgroup</dt>
          <dd>
            <State item={st.workgroup} /> {failed(st.workgroup) && retry}
          </dd>
          <dt>Resource Broker</dt>
          <dd>
            <span aria-label="Resource Broker" className={st.broker.state === 'done' ? 'ok' : 'warn'}>
              {st.broker.label}
            </span>
            {st.broker.state === 'failed' || st.broker.state === 'skipped'
              ? null
              : st.broker.error && <div className="small error">{st.broker.error}</div>}
            {st.broker.state === 'skipped' && st.broker.error && <div className="small muted">{st.broker.error}</div>}{' '}
            {failed(st.broker) && retry}
          </dd>
          <dt>Entitle</dt>
          <dd>
            <State item={st.entitle} /> {failed(st.entitle) && retry}
            <div className="small muted">SSH integration: {st.entitle.sshIntegration.reason}</div>
          </dd>
        </dl>
        <table className="table" aria-label="Access per VM">
          <thead>
            <tr>
              <th>VM</th>
              <th>Jump item</th>
              <th>Password Safe</th>
              <th>Entitle</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {st.vms.map((v) => (
              <tr key={v.vmId} aria-label={`access ${v.name}`}>
                <td>
                  {v.name}{' '}
                  <span className="small muted">
                    {v.os} {v.ip ?? ''}
                  </span>
                </td>
                <td>
                  <State
                    item={v.jumpItem}
                    label={
                      v.jumpItem.state === 'done' ? (v.jumpItem.type === 'shell_jump' ? 'shell jump' : 'remote RDP') : v.jumpItem.state
                    }
                  />
                </td>
                <td>
                  <State item={v.passwordSafe} />
                </td>
                <td>
                  <State item={v.entitle} />
                </td>
                <td>{[v.jumpItem, v.passwordSafe, v.entitle].some(failed) && retry}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <TenantsForm key={povId} povId={povId} view={st.tenants} onSaved={load} />
      <GatewaySettings />
    </section>
  );
}
