import { useEffect, useRef, useState } from 'react';
import type { JobRecord } from '../../../../shared/contract';
import type { PovView } from '../../../../shared/contract/pov';
import { LOCAL_SUSPEND_NOTE } from '../../state/lab';
import type { PovAction } from './actions';
import { bothZones, withZones } from './time';
import { controlNodeStatusText } from './control-node-cell';

const ACTIONS: { action: PovAction; label: string; key: 'start' | 'suspend' | 'destroy'; className?: string }[] = [
  { action: 'pov.start', label: 'Start', key: 'start' },
  { action: 'pov.suspend', label: 'Suspend', key: 'suspend' },
  { action: 'pov.destroy', label: 'Destroy', key: 'destroy', className: 'danger' },
];

/**
 * The row's actions: buttons that fit the row at 1280 px and wider; below that (pov.css) they
 * give way to one "Actions" button opening a menu of the same three, which Escape closes.
 */
export function RowActions({ pov: p, onAction }: { pov: PovView; onAction(action: PovAction, pov: PovView): void }) {
  const [open, setOpen] = useState(false);
  const menuRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (open) menuRef.current?.querySelector<HTMLButtonElement>('button:not(:disabled)')?.focus();
  }, [open]);
  return (
    <span role="cell" className="pov-actions">
      <span className="pov-actions-inline">
        {ACTIONS.map((a) => (
          <button
            key={a.key}
            className={a.className}
            disabled={!p.actions[a.key]}
            onClick={() => onAction(a.action, p)}
            aria-label={`${a.label} ${p.name}`}
            title={p.platform === 'local' && a.key === 'suspend' ? LOCAL_SUSPEND_NOTE : undefined}
          >
            {a.label}
          </button>
        ))}
      </span>
      <span className="pov-actions-menu">
        <button aria-haspopup="menu" aria-expanded={open} aria-label={`Actions for ${p.name}`} onClick={() => setOpen((o) => !o)}>
          Actions ▾
        </button>
        {open && (
          <div
            role="menu"
            ref={menuRef}
            className="pov-menu"
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                e.stopPropagation();
                setOpen(false);
              }
            }}
          >
            {ACTIONS.map((a) => (
              <button
                key={a.key}
                role="menuitem"
                className={a.className}
                disabled={!p.actions[a.key]}
                onClick={() => {
                  setOpen(false);
                  onAction(a.action, p);
                }}
              >
                {a.label}
              </button>
            ))}
          </div>
        )}
      </span>
    </span>
  );
}

/** The expanded row: every reason the cells shorten, in full, and the times in the SE's zone (and the customer's). */
export function RowDetails({ pov: p, now, lastFailed }: { pov: PovView; now: number; lastFailed?: JobRecord | undefined }) {
  const share = p.readiness?.shareExpiresAt ?? null;
  const lines: [string, string][] = [];
  if (p.readiness) lines.push(['Readiness', withZones(p.readiness.summary, p.customerTz)]);
  if (p.controlNode.reason) lines.push(['Control node', `${controlNodeStatusText(p.controlNode.status)}: ${p.controlNode.reason}`]);
  if (p.errorMessage) lines.push(['Error', p.errorMessage]);
  if (lastFailed?.error) lines.push(['Last job', `${lastFailed.title} failed: ${lastFailed.error.message}`]);
  if (p.autoDelete?.reason) lines.push(['Auto-delete', p.autoDelete.reason]);
  const tz = p.customerTz ?? null;
  lines.push(['Deletes at', p.autoDelete?.at ? bothZones(p.autoDelete.at, tz) : 'no auto-delete time set']);
  if (p.autoDelete?.nextWarning)
    lines.push(['Next warning', `${p.autoDelete.nextWarning.step} before: ${bothZones(p.autoDelete.nextWarning.at, tz)}`]);
  lines.push(['Share link', share ? `${Date.parse(share) <= now ? 'expired' : 'expires'} ${bothZones(share, tz)}` : 'no live share link']);
  lines.push(['Template', `${p.templateName || '—'} (id ${p.templateId})`]);
  return (
    <div className="pov-details" data-testid="pov-details" role="cell" aria-label={`Details for ${p.name}`}>
      <dl>
        {lines.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}
