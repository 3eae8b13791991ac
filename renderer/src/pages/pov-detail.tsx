import { useEffect, useRef, useState } from 'react';
import { errorText } from '../api';
import { AccessPanel } from '../components/pam/access-panel';
import { RateLimitedBadge, RunstateBadge } from '../components/pov/badges';
import { controlNodeStatusText } from '../components/pov/control-node-cell';
import { CustomerTzField } from '../components/pov/customer-tz';
import { LocalPovSwitches } from '../components/pov/local-pov-switches';
import { LocalPovVms } from '../components/pov/local-pov-vms';
import { PlatformLabel } from '../components/pov/platform-label';
import { ReadinessChecklist, type FixHandlers } from '../components/pov/readiness';
import { NameVmDialog } from '../components/pov/name-vm-dialog';
import { navigate, reveal } from '../nav';
import { bothZones, confirmedText } from '../components/pov/time';
import { VmsTab } from '../components/pov/vms-tab';
import { AutoDeleteBox } from '../components/share/auto-delete-box';
import { SharePanel } from '../components/share/share-panel';
import '../components/share/share.css';
import { LOCAL_NO_AUTO_DELETE, LOCAL_NO_SHARE } from '../state/lab';
import { usePovs } from '../state/pov';
import { useVms } from '../state/vms';
import { ErrorAlert } from '../components/error-alert';
import '../components/pov/pov.css';
import '../components/pov/lab.css';
import './local-vms-page.css';

/**
 * One POV: facts, its error or control-node reason, and the VMs tab. A local POV's VMs tab is the
 * vm-manager's view of its VMs (console, attestation); what its platform lacks (auto-delete, share
 * links) says so instead of offering it.
 */
export default function PovDetail({ povId, onBack, focus }: { povId: string; onBack(): void; focus?: 'extend' }) {
  const d = usePovs((s) => s.detail[povId]);
  const loadDetail = usePovs((s) => s.loadDetail);
  const setVmOs = usePovs((s) => s.setVmOs);
  const act = usePovs((s) => s.act);
  const actionError = usePovs((s) => s.actionError);
  const [error, setError] = useState<string | null>(null);
  const [tab, setTab] = useState<'vms' | 'details'>('vms');
  const [naming, setNaming] = useState(false);
  const connection = useVms((s) => s.connection);

  useEffect(() => {
    loadDetail(povId).catch((e) => setError(errorText(e)));
  }, [povId, loadDetail]);

  // the row moves by `pov.updated` events (PovsPage follows them); its VMs are read again when the
  // row is written or its job starts or ends
  const version = d ? `${d.pov.updatedAt}|${d.pov.activeJobId ?? ''}` : null;
  const seenVersion = useRef(version);
  useEffect(() => {
    if (version === null || seenVersion.current === version) return;
    const first = seenVersion.current === null;
    seenVersion.current = version;
    if (!first) loadDetail(povId).catch((e) => setError(errorText(e)));
  }, [version, povId, loadDetail]);

  if (error) {
    return (
      <section className="page">
        <button className="link" onClick={onBack}>
          ← POVs
        </button>
        <ErrorAlert error={error} />
      </section>
    );
  }
  if (!d) return <p className="muted">Loading…</p>;
  const p = d.pov;
  const local = p.platform === 'local';
  // Each checklist Fix opens the place it names on this page (or Settings, Jobs), or does the action.
  const fixes: FixHandlers = {
    'pov.start': () => void act('pov.start', p.id),
    'pov.destroy': () => {
      if (window.confirm(`Destroy POV "${p.name}"? This cannot be undone.`)) void act('pov.destroy', p.id);
    },
    'reconcile.runNow': () => void usePovs.getState().reconcile(),
    'pov.installControlNode': () => void usePovs.getState().installControlNode(p.id),
    'pov.setControlNodeName': () => setNaming(true),
    'controlNode.saveSettings': () => navigate('settings', 'control-node'),
    'pam.saveTenants': () => reveal('pov-access'),
    'pam.wire': () => reveal('pov-access'),
    'share.create': () => reveal('pov-share'),
    'share.extend': () => reveal('pov-share'),
    'pov.setAutoDelete': () => reveal('pov-auto-delete'),
    jobs: () => navigate('jobs'),
  };
  return (
    <section className="page" aria-label={`POV ${p.name}`}>
      <button className="link" onClick={onBack}>
        ← POVs
      </button>
      <header className="page-head">
        <h2>{p.name}</h2>
        <PlatformLabel platform={p.platform} connection={connection} />
        <RunstateBadge runstate={p.runstate} state={p.state} />
        {p.rateLimited && <RateLimitedBadge />}
        <span className="small muted">{confirmedText(p.lastConfirmedAt, Date.now())}</span>
        <button disabled={!p.actions.refreshVms} onClick={() => void act('pov.refreshVms', p.id).then(() => loadDetail(p.id))}>
          Refresh VMs
        </button>
      </header>
      <ErrorAlert error={actionError} />
      {p.errorMessage && (
        <p className="banner error" role="alert">
          {p.errorMessage}
        </p>
      )}
      {p.state !== 'destroyed' && (
        <ReadinessChecklist
          povId={p.id}
          platform={p.platform}
          customerTz={p.customerTz}
          fixes={fixes}
          refreshKey={`${p.updatedAt} ${p.activeJobId ?? ''}`}
        />
      )}
      {/* not set up is the checklist's neutral "not configured" row; a failure or refusal stays a banner */}
      {p.controlNode.reason && p.controlNode.status !== 'not_set_up' && (
        <p className="banner warn">
          Control node: {controlNodeStatusText(p.controlNode.status)} — {p.controlNode.reason}
        </p>
      )}
      <CustomerTzField key={p.customerTz ?? ''} pov={p} onChanged={() => void loadDetail(p.id)} />
      {local && p.state !== 'destroyed' && <LocalPovSwitches pov={p} onChanged={() => void loadDetail(p.id)} />}
      {local ? (
        <div className="panel small muted" data-testid="local-platform-notes">
          <p>{LOCAL_NO_AUTO_DELETE}</p>
          <p>{LOCAL_NO_SHARE}</p>
        </div>
      ) : (
        <div className="share-grid">
          <div id="pov-auto-delete">
            <AutoDeleteBox pov={p} focusExtend={focus === 'extend'} onChanged={() => void loadDetail(p.id)} />
          </div>
          {p.envId && p.state !== 'destroyed' && (
            <div id="pov-share">
              <SharePanel pov={p} vms={d.vms} />
            </div>
          )}
        </div>
      )}
      <div className="tabs" role="tablist">
        <button role="tab" aria-selected={tab === 'vms'} onClick={() => setTab('vms')}>
          VMs ({d.vms.filter((v) => !v.goneAt).length})
        </button>
        <button role="tab" aria-selected={tab === 'details'} onClick={() => setTab('details')}>
          Details
        </button>
      </div>
      {tab === 'vms' ? (
        local ? (
          <LocalPovVms envId={p.envId} povVms={d.vms} />
        ) : (
          <VmsTab vms={d.vms} onSetOs={(vmId, os) => setVmOs(p.id, vmId, os)} />
        )
      ) : (
        <dl className="facts panel">
          <dt>State</dt>
          <dd>{p.state}</dd>
          <dt>Template</dt>
          <dd>
            {p.templateName || '—'} <span className="muted small">(id {p.templateId})</span>
          </dd>
          <dt>Lab platform</dt>
          <dd>
            <PlatformLabel platform={p.platform} connection={connection} />
          </dd>
          {!local && (
            <>
              <dt>Skytap environment</dt>
              <dd className="mono">{p.envId ?? 'not created'}</dd>
            </>
          )}
          <dt>Last confirmed</dt>
          <dd>{p.lastConfirmedAt ? bothZones(p.lastConfirmedAt, p.customerTz) : 'never'}</dd>
          <dt>Control node</dt>
          <dd>{controlNodeStatusText(p.controlNode.status, '—')}</dd>
          <dt>Created</dt>
          <dd>{bothZones(p.createdAt, p.customerTz)}</dd>
        </dl>
      )}
      <div id="pov-access">
        <AccessPanel povId={p.id} />
      </div>
      {naming && <NameVmDialog pov={p} onClose={() => setNaming(false)} />}
    </section>
  );
}
