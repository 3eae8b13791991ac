import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import type { JobRecord } from '../../../shared/contract';
import { POV_LIFECYCLE_JOB_KINDS } from '../../../shared/contract/job-kinds';
import { EmptyState } from '../components/empty-state';
import { rebuildQuestion, type ControlNodeAction } from '../components/pov/control-node-cell';
import { OPEN_POV_EVENT, takePendingPov } from '../components/share/open-pov';
import type { PovAction } from '../components/pov/actions';
import { PovList } from '../components/pov/pov-list';
import { arrange, DEFAULT_ARRANGEMENT, type Arrangement } from '../components/pov/arrange';
import { ListControls } from '../components/pov/list-controls';
import { useJobs } from '../state/jobs';
import { usePovs } from '../state/pov';
import type { PovView } from '../../../shared/contract/pov';
import { NAVIGATE_EVENT, povFromHash } from '../nav';
import { ErrorAlert } from '../components/error-alert';
import { RehearseOffer } from '../components/pov/rehearse';
import { noSkytapAccount } from '../state/lab';
import { useSettings } from '../state/settings';
import { useVms } from '../state/vms';
import '../components/pov/pov.css';
import '../components/pov/lab.css';

// A POV's page (its tabs: VMs with their consoles, access, share) loads when one is opened: the
// first paint carries only the list (xterm stays out of it; test/bench/foundation.ts guards it).
const PovDetail = lazy(() => import('./pov-detail'));
// The two dialogs load when first opened (their own Suspense, so the list stays on screen meanwhile).
const CreatePovDialog = lazy(() => import('../components/pov/create-pov-dialog').then((m) => ({ default: m.CreatePovDialog })));
const NameVmDialog = lazy(() => import('../components/pov/name-vm-dialog').then((m) => ({ default: m.NameVmDialog })));

/**
 * POVs: every lab environment this app manages (Skytap, or the vm-manager: this laptop's or a
 * remote one), with the runstate last CONFIRMED and its age. With no Skytap account saved, the
 * page offers a rehearsal on this laptop (the bundled test template). Actions are gated on that
 * confirmed state; jobs show their progress inline.
 */
export default function PovsPage() {
  const { povs, error, actionError, load, act, reconcile, create, installControlNode } = usePovs();
  const [naming, setNaming] = useState<PovView | null>(null);
  const jobs = useJobs((s) => s.jobs);
  const follow = useJobs((s) => s.follow);
  const [open, setOpen] = useState<string | null>(() => povFromHash());
  const [creating, setCreating] = useState(false);
  const [focus, setFocus] = useState<'extend' | undefined>(undefined);
  const [now, setNow] = useState(() => Date.now());
  const [arrangement, setArrangement] = useState<Arrangement>(DEFAULT_ARRANGEMENT);
  const shown = useMemo(() => (povs ? arrange(povs, arrangement) : []), [povs, arrangement]);
  const followPovs = usePovs((s) => s.follow);
  const settings = useSettings((s) => s.view);
  const connection = useVms((s) => s.connection);

  // whether a Skytap account is saved (no: offer the rehearsal) and which vm-manager `local` means
  useEffect(() => {
    void useSettings.getState().load();
    void useVms.getState().loadConnection();
  }, []);

  useEffect(() => follow(), [follow]);
  // rows change by `pov.updated` events (jobs, the sweep, other windows), read once here
  useEffect(() => followPovs(), [followPovs]);
  // A povdesk:// link while this page is already open (main/electron/desktop.ts navigates), or the
  // sidebar's "POVs" (`#/povs`: back to the list).
  useEffect(() => {
    const go = () => {
      setOpen(povFromHash());
      setFocus(undefined);
    };
    window.addEventListener(NAVIGATE_EVENT, go);
    return () => window.removeEventListener(NAVIGATE_EVENT, go);
  }, []);
  // a clicked warning opens its POV with Extend focused
  useEffect(() => {
    const take = () => {
      const p = takePendingPov();
      if (p) {
        setFocus(p.focus);
        setOpen(p.povId);
      }
    };
    take();
    window.addEventListener(OPEN_POV_EVENT, take);
    return () => window.removeEventListener(OPEN_POV_EVENT, take);
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  // "confirmed N min ago" moves on by itself
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(t);
  }, []);
  // the latest settled lifecycle job per POV (a failed Start shows on its row)
  const lastJobs = useMemo(() => {
    const out: Record<string, JobRecord> = {};
    for (const j of Object.values(jobs)) {
      if (!j.subject || !POV_LIFECYCLE_JOB_KINDS.includes(j.kind) || j.state === 'queued' || j.state === 'running') continue;
      const cur = out[j.subject];
      if (!cur || cur.createdAt < j.createdAt) out[j.subject] = j;
    }
    return out;
  }, [jobs]);

  function onAction(action: PovAction, pov: { id: string; name: string; platform: string }) {
    const what = pov.platform === 'local' ? 'delete its VMs from the vm-manager' : 'delete its Skytap environment';
    if (action === 'pov.destroy' && !window.confirm(`Destroy POV "${pov.name}" and ${what}? This cannot be undone.`)) return;
    void act(action, pov.id);
  }

  function onControlNode(action: ControlNodeAction, pov: PovView) {
    if (action === 'name') setNaming(pov);
    else if (action === 'install' || window.confirm(rebuildQuestion(pov))) void installControlNode(pov.id);
  }

  if (open)
    return (
      <PovDetail
        key={`${open}-${focus ?? ''}`}
        povId={open}
        {...(focus ? { focus } : {})}
        onBack={() => {
          setOpen(null);
          setFocus(undefined);
          window.history.replaceState(null, '', '#/povs');
          void load();
        }}
      />
    );

  return (
    <section className="page">
      <header className="page-head">
        <h2>POVs</h2>
        <span className="small muted">
          Runstates are as each POV's platform (Skytap or the vm-manager) last confirmed them (checked every 10 min).
        </span>
        <button onClick={() => void reconcile()}>Refresh now</button>
        <button className="primary" onClick={() => setCreating(true)}>
          New POV
        </button>
      </header>
      <ErrorAlert error={error} />
      <ErrorAlert error={actionError} />
      {/* the first-launch card with no Skytap account, one button beside a saved one (same element: a running
          rehearsal keeps its state) */}
      {settings && (noSkytapAccount(settings) || connection) && (
        <RehearseOffer compact={!noSkytapAccount(settings)} connection={connection} onStarted={() => void load()} />
      )}
      {povs && povs.length === 0 && (
        <EmptyState title="No POVs yet">Press New POV to create one from a Skytap template or a local template.</EmptyState>
      )}
      {povs && povs.length > 0 && <ListControls value={arrangement} onChange={setArrangement} shown={shown.length} total={povs.length} />}
      {povs && povs.length > 0 && (
        <PovList
          povs={shown}
          jobs={jobs}
          lastJobs={lastJobs}
          now={now}
          onOpen={setOpen}
          onAction={onAction}
          onControlNode={onControlNode}
          connection={connection}
        />
      )}
      <Suspense fallback={null}>
        {naming && <NameVmDialog pov={naming} onClose={() => setNaming(null)} />}
        {creating && (
          <CreatePovDialog
            onClose={() => setCreating(false)}
            initialPlatform={noSkytapAccount(settings) ? 'local' : 'skytap'}
            onCreate={async (input) => {
              await create(input);
            }}
          />
        )}
      </Suspense>
    </section>
  );
}
