import { observeElementRect, useVirtualizer, type Virtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState } from 'react';
import type { JobRecord } from '../../../../shared/contract';
import type { PovView } from '../../../../shared/contract/pov';
import type { VmConnection } from '../../../../shared/contract/vm';
import type { PovAction } from './actions';
import { ProgressBar } from '../progress-bar';
import { RateLimitedBadge, RunstateBadge } from './badges';
import { PlatformLabel } from './platform-label';
import { ControlNodeCell, type ControlNodeAction } from './control-node-cell';
import { RowActions, RowDetails } from './row-extras';
import { ReadinessBadge, TimesLine } from './readiness';
import { bothZones, confirmedText } from './time';

export const ROW_HEIGHT = 64;
/** An expanded row shows every reason in full below it (scrolling inside when longer). */
export const EXPANDED_EXTRA = 150;
/** Used only when the host has no layout engine (a 0-height measurement); a real window measures. */
const FALLBACK_VIEWPORT = 640;

export interface PovListProps {
  povs: PovView[];
  /** Live job snapshots by id (the jobs.update stream). */
  jobs: Record<string, JobRecord>;
  /** The latest settled job per POV id, to show why a Start/Suspend/Refresh failed. */
  lastJobs?: Record<string, JobRecord>;
  /** Clock for "confirmed N min ago" (passed in so every row agrees and tests can fix it). */
  now: number;
  onOpen(id: string): void;
  onAction(action: PovAction, pov: PovView): void;
  /** name VM / Install control node in the Control node column. */
  onControlNode?(action: ControlNodeAction, pov: PovView): void;
  /** The app's vm-manager connection: a local POV's label says "This laptop" or "Remote vm-manager". */
  connection?: VmConnection | null;
}

function observeWithFallback(instance: Virtualizer<HTMLDivElement, Element>, cb: (r: { width: number; height: number }) => void) {
  return observeElementRect(instance, (rect) => cb(rect.height > 0 ? rect : { width: rect.width || 1000, height: FALLBACK_VIEWPORT }));
}

/**
 * The POV list, virtualised: only the rows in view (plus a small overscan) are in the DOM, so
 * 2,000 POVs render as fast as 20. Runstates are the last CONFIRMED reading, shown with its age.
 */
export function PovList({ povs, jobs, lastJobs = {}, now, onOpen, onAction, onControlNode, connection = null }: PovListProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const v = useVirtualizer({
    count: povs.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => (expanded.has(povs[i]!.id) ? ROW_HEIGHT + EXPANDED_EXTRA : ROW_HEIGHT),
    overscan: 6,
    initialRect: { width: 1000, height: FALLBACK_VIEWPORT },
    observeElementRect: observeWithFallback,
    getItemKey: (i) => povs[i]!.id,
  });
  const toggle = (id: string) => {
    setExpanded((cur) => {
      const next = new Set(cur);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  };
  // sizes are cached per row: re-read them once the new expanded set is in the options
  useEffect(() => v.measure(), [expanded, v]);
  /** Arrow keys move between rows (focus on the row's name), Enter opens it, Delete asks to destroy. */
  const onKeyDown = (e: React.KeyboardEvent<HTMLDivElement>) => {
    const target = e.target as HTMLElement;
    if (target.closest('input, select, textarea, [role="menu"]')) return;
    const id = target.closest<HTMLElement>('[data-pov]')?.dataset.pov;
    const at = id === undefined ? -1 : povs.findIndex((p) => p.id === id);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      const next = Math.min(povs.length - 1, Math.max(0, at + (e.key === 'ArrowDown' ? 1 : -1)));
      if (next === at || !povs[next]) return;
      e.preventDefault();
      v.scrollToIndex(next);
      const nextId = povs[next]!.id;
      const focus = (tries: number) => {
        const row = [...(scrollRef.current?.querySelectorAll<HTMLElement>('[data-pov]') ?? [])].find((r) => r.dataset.pov === nextId);
        const el = row?.querySelector<HTMLElement>('.pov-open');
        if (el) el.focus();
        else if (tries > 0) requestAnimationFrame(() => focus(tries - 1));
      };
      focus(5);
    } else if (e.key === 'Delete' && at >= 0) {
      const p = povs[at]!;
      if (!p.actions.destroy) return;
      e.preventDefault();
      onAction('pov.destroy', p);
    }
  };
  return (
    <div className="pov-list" role="table" aria-label="POVs" aria-rowcount={povs.length + 1}>
      <div className="pov-row pov-head" role="row" aria-rowindex={1}>
        <span role="columnheader">Name</span>
        <span role="columnheader">Readiness</span>
        <span role="columnheader">Runstate</span>
        <span role="columnheader">Control node</span>
        <span role="columnheader">Status</span>
        <span role="columnheader">Actions</span>
      </div>
      <div className="pov-scroll" ref={scrollRef} data-testid="pov-scroll" onKeyDown={onKeyDown}>
        <div style={{ height: v.getTotalSize(), position: 'relative' }}>
          {v.getVirtualItems().map((item) => {
            const p = povs[item.index]!;
            const job = p.activeJobId ? jobs[p.activeJobId] : undefined;
            const last = lastJobs[p.id];
            const lastFailed = last && last.state === 'failed' && last.error ? last : undefined;
            const open = expanded.has(p.id);
            return (
              <div
                key={item.key}
                className={`pov-row${open ? ' expanded' : ''}`}
                role="row"
                aria-rowindex={item.index + 2}
                data-pov={p.id}
                style={{
                  position: 'absolute',
                  top: 0,
                  left: 0,
                  right: 0,
                  height: open ? ROW_HEIGHT + EXPANDED_EXTRA : ROW_HEIGHT,
                  transform: `translateY(${item.start}px)`,
                }}
              >
                <span role="cell" className="pov-name">
                  <span className="pov-name-line">
                    <button
                      className="pov-expand"
                      aria-expanded={open}
                      aria-label={`${open ? 'Hide' : 'Show'} details for ${p.name}`}
                      title="Every reason in full"
                      onClick={() => toggle(p.id)}
                    >
                      {open ? '▾' : '▸'}
                    </button>
                    <button
                      className="link ellipsis pov-open"
                      onClick={() => onOpen(p.id)}
                      title={
                        p.name +
                        (p.platform !== 'skytap' ? '' : p.envId ? ` — Skytap environment ${p.envId}` : ' — no Skytap environment yet')
                      }
                    >
                      {p.name}
                    </button>
                  </span>
                  <span className="pov-name-sub">
                    <span className="small muted ellipsis" title={p.templateName || p.templateId}>
                      {p.templateName || `template ${p.templateId}`}
                    </span>
                    <PlatformLabel platform={p.platform} connection={connection} />
                  </span>
                </span>
                <span role="cell" className="pov-ready">
                  <span className="pov-ready-line">
                    <ReadinessBadge readiness={p.readiness} platform={p.platform} customerTz={p.customerTz} />
                    {p.autoDelete?.lastWarning && (
                      <span
                        className={`badge ${p.autoDelete.lastWarning === '1h' ? 'bad' : 'warn'} pov-warning`}
                        title={`Auto-delete at ${p.autoDelete.at ? bothZones(p.autoDelete.at, p.customerTz) : '?'}`}
                      >
                        deleted in &lt; {p.autoDelete.lastWarning}
                      </span>
                    )}
                    {p.autoDelete?.status === 'not_armed' && (
                      <span className="badge warn pov-warning" title={p.autoDelete.reason ?? ''}>
                        auto-delete not armed
                      </span>
                    )}
                  </span>
                  <TimesLine pov={p} now={now} />
                </span>
                <span role="cell">
                  <RunstateBadge runstate={p.runstate} state={p.state} />
                  {p.rateLimited && <RateLimitedBadge />}
                  <div className="small muted" title={p.lastConfirmedAt ?? ''}>
                    {confirmedText(p.lastConfirmedAt, now)}
                  </div>
                </span>
                <ControlNodeCell
                  pov={p}
                  job={p.controlNode.jobId ? jobs[p.controlNode.jobId] : undefined}
                  {...(onControlNode ? { onAction: onControlNode } : {})}
                />
                <span role="cell" className="pov-status">
                  {job && (job.state === 'running' || job.state === 'queued') ? (
                    <>
                      <ProgressBar fraction={job.progress.fraction} label={job.progress.step} />
                      <div className="small muted ellipsis" title={job.progress.step || job.state}>
                        {job.progress.step || job.state}
                      </div>
                    </>
                  ) : p.errorMessage ? (
                    <span className="error small clamp" title={p.errorMessage}>
                      {p.errorMessage}
                    </span>
                  ) : lastFailed ? (
                    <span className="error small clamp" title={lastFailed.error!.message}>
                      {lastFailed.title} failed: {lastFailed.error!.message}
                    </span>
                  ) : (
                    <span className={`small state-${p.state}`}>{p.state}</span>
                  )}
                </span>
                <RowActions pov={p} onAction={onAction} />
                {open && <RowDetails pov={p} now={now} lastFailed={lastFailed} />}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
