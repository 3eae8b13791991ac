import type { JobRecord } from '../../../../shared/contract';
import type { PovView } from '../../../../shared/contract/pov';

export type ControlNodeAction = 'name' | 'install' | 'rebuild';

const STATUS_TONE: Record<string, string> = {
  enrolled: 'ok',
  not_set_up: 'warn',
  installing: 'warn',
  waiting: 'warn',
  failed: 'bad',
  none: 'muted',
  revoked: 'muted',
};
/** Statuses that read better in words than as the stored value. */
const STATUS_TEXT: Record<string, string> = { not_set_up: 'not set up' };

/** A control node's status as the UI writes it (null: nothing installed). */
export function controlNodeStatusText(status: string | null, none = 'not installed'): string {
  return status === null ? none : (STATUS_TEXT[status] ?? status);
}

/** The confirm before Rebuild control node: what a re-run of the bootstrap does to the enrolled node. */
export function rebuildQuestion(pov: PovView): string {
  const vm = pov.controlNode.vm ?? 'the control node';
  return (
    `Rebuild the control node on ${vm} for "${pov.name}"? The bootstrap runs again: the current agent is revoked, ` +
    "the agent's state volume is removed and a new agent enrols with a new enrolment code (the code lives 15 minutes)."
  );
}

const INSTALL_ACTIONS = {
  install: { action: 'install', verb: 'Install', label: 'Install control node', title: 'Install the agent on this VM' },
  rebuild: {
    action: 'rebuild',
    verb: 'Rebuild',
    label: 'Rebuild control node',
    title: "Re-run the bootstrap on this VM: a new enrolment code, the agent's state volume removed, a new enrolment",
  },
} as const;

/** Busy statuses: an install is under way, so there is nothing to press. */
const IN_PROGRESS = new Set(['installing', 'waiting']);

/**
 * The Control node column: the VM (or `none` with the reason beside it), the status with a SPIRE /
 * Ed25519 label once enrolled, the install job's step while it runs, and the actions: name VM
 * (sets the name and re-resolves), Install control node (beside the reason) and, once enrolled,
 * Rebuild control node (the same install again, after a confirm the page asks for).
 */
export function ControlNodeCell({
  pov,
  job,
  onAction,
}: {
  pov: PovView;
  job?: JobRecord | undefined;
  onAction?: (a: ControlNodeAction, p: PovView) => void;
}) {
  const cn = pov.controlNode;
  const running = job && (job.state === 'running' || job.state === 'queued');
  const refused = cn.status === 'none';
  const vm = refused ? 'none' : (cn.vm ?? (cn.vmId ? `VM ${cn.vmId}` : '—'));
  // in progress only while this process runs the install job (a status left by a stopped app is not)
  const inProgress = Boolean(cn.jobId) && IN_PROGRESS.has(cn.status ?? '');
  // Install until the agent is enrolled, then Rebuild (the same install, after the page's confirm).
  const offered = pov.state === 'active' && !running && !inProgress && !cn.jobId;
  const install = offered ? INSTALL_ACTIONS[cn.status === 'enrolled' ? 'rebuild' : 'install'] : null;
  const canInstall = install !== null && pov.runstate === 'running' && !pov.activeJobId;
  const mode = cn.mode === 'spire' ? 'SPIRE' : cn.mode === 'ed25519' ? 'Ed25519' : null;
  return (
    <span role="cell" className="pov-cn" data-testid="control-node">
      <span className="pov-cn-line">
        <span
          className={refused ? 'muted' : 'pov-cn-vm'}
          data-testid="cn-vm"
          title={cn.name ? `named "${cn.name}"` : 'resolved from the template'}
        >
          {vm}
        </span>
        {cn.status && cn.status !== 'none' && (
          <span className={`badge ${STATUS_TONE[cn.status] ?? ''}`} data-testid="cn-status">
            {controlNodeStatusText(cn.status)}
          </span>
        )}
        {mode && cn.status === 'enrolled' && (
          <span
            className="badge pov-cn-mode"
            data-testid="cn-mode"
            title={
              mode === 'SPIRE'
                ? 'the agent attests through SPIRE (key held in memory)'
                : 'the agent signs with an Ed25519 key from its enrolment code'
            }
          >
            {mode}
          </span>
        )}
      </span>
      <span className="pov-cn-line small">
        {running ? (
          <span className="muted ellipsis" data-testid="cn-step">
            {job.progress.step || job.state}…
          </span>
        ) : (
          cn.reason && (
            <span className={`ellipsis ${cn.status === 'failed' || refused ? 'error' : 'muted'}`} title={cn.reason} data-testid="cn-reason">
              {cn.reason}
            </span>
          )
        )}
        {pov.state === 'active' && (
          <button className="link" onClick={() => onAction?.('name', pov)} aria-label={`name VM for ${pov.name}`}>
            name VM
          </button>
        )}
        {install && (
          <button
            onClick={() => onAction?.(install.action, pov)}
            disabled={!canInstall}
            aria-label={`${install.label} for ${pov.name}`}
            title={canInstall ? install.title : 'Needs the environment running and no other operation under way'}
          >
            {install.verb}
            <span className="wide-only"> control node</span>
          </button>
        )}
      </span>
    </span>
  );
}
