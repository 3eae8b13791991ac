import { useCallback, useEffect, useState } from 'react';
import type { PovView } from '../../../../shared/contract/pov';
import type { PovReadiness, ReadinessItem, ReadinessLevel } from '../../../../shared/contract/readiness';
import { readinessWords } from '../../../../shared/contract/values';
import { api, errorText } from '../../api';
import { bothZones, withZones } from './time';

const TONE: Record<ReadinessLevel, string> = { ready: 'ok', attention: 'warn', not_ready: 'bad' };
const ITEM_WORDS: Record<ReadinessItem['state'], string> = {
  ok: 'ok',
  not_configured: 'not configured',
  attention: 'attention',
  not_ready: 'not ready',
};
/** not configured is neutral: an optional service nobody set up is not a fault. */
const ITEM_TONE: Record<ReadinessItem['state'], string> = { ok: 'ok', not_configured: 'muted', attention: 'warn', not_ready: 'bad' };

/** The readiness badge: always words (colour is never the only signal), the reason on hover. */
export function ReadinessBadge({
  readiness,
  platform,
  customerTz,
}: {
  readiness: PovView['readiness'];
  platform: string;
  customerTz?: string | null | undefined;
}) {
  if (!readiness) return <span className="badge muted">unknown</span>;
  return (
    <span className={`badge ${TONE[readiness.overall]}`} data-testid="readiness" title={withZones(readiness.summary, customerTz)}>
      {readinessWords(readiness.overall, platform)}
    </span>
  );
}

/**
 * What each Fix does, by the contract method the core names: a function opens the place the label
 * names (a panel on this page, Settings → Control node, Jobs) or does the action there. An action
 * with no entry is shown as words only.
 */
export type FixHandlers = Partial<Record<string, () => void>>;

function FixLine({ item, fixes }: { item: ReadinessItem; fixes: FixHandlers }) {
  const a = item.action;
  if (!a) return null;
  // "see Jobs" / "in Jobs": the Jobs page is the place those name
  const run = a.method ? fixes[a.method] : /\bJobs\b/.test(a.label) ? fixes['jobs'] : undefined;
  const lead = item.state === 'not_configured' ? null : <strong>Fix: </strong>;
  return (
    <span className="small readiness-fix">
      {lead}
      {run ? (
        <button type="button" className="link" onClick={run}>
          {a.label}
        </button>
      ) : (
        a.label
      )}
    </span>
  );
}

/** "in 2 d 3 h" / "3 h ago": a distance in words for countdowns and ages. */
export function distanceText(deltaMs: number): string {
  const s = Math.abs(deltaMs) / 1000;
  const m = Math.round(s / 60);
  const h = Math.floor(m / 60);
  const text =
    s < 60 ? `${Math.round(s)} s` : m < 60 ? `${m} min` : h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
  return deltaMs >= 0 ? `in ${text}` : `${text} ago`;
}

/** Auto-delete countdown and share-link expiry, as the row and the POV page show them. */
export function TimesLine({ pov, now }: { pov: PovView; now: number }) {
  const del = pov.autoDelete?.at ?? null;
  const share = pov.readiness?.shareExpiresAt ?? null;
  return (
    <span className="pov-times small" data-testid="pov-times">
      <span title={del ? `Skytap deletes the environment at ${bothZones(del, pov.customerTz)}` : 'no auto-delete time set'}>
        {del ? `deletes ${distanceText(Date.parse(del) - now)}` : 'no auto-delete'}
      </span>
      <span title={share ? `the customer's share link expires at ${bothZones(share, pov.customerTz)}` : 'no live share link'}>
        {share ? `link ${Date.parse(share) <= now ? 'expired' : 'expires'} ${distanceText(Date.parse(share) - now)}` : 'no share link'}
      </span>
    </span>
  );
}

/** The POV page's checklist: each item's state in words, its age, what was found and the one fix (a link to its place). */
export function ReadinessChecklist({
  povId,
  platform,
  refreshKey,
  customerTz,
  fixes = {},
}: {
  povId: string;
  platform: string;
  refreshKey?: unknown;
  customerTz?: string | null | undefined;
  fixes?: FixHandlers;
}) {
  const [r, setR] = useState<PovReadiness | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    api
      .call('pov.readiness', { id: povId })
      .then((x) => {
        setR(x);
        setError(null);
      })
      .catch((e) => setError(errorText(e)));
  }, [povId]);
  useEffect(load, [load, refreshKey]);
  if (error)
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  if (!r) return <p className="muted">Checking readiness…</p>;
  const checked = Date.parse(r.checkedAt);
  return (
    <section className="panel readiness" aria-label="Demo readiness" data-testid="readiness-checklist">
      <header className="readiness-head">
        <h3>Demo readiness</h3>
        <span className={`badge ${TONE[r.overall]}`} data-testid="readiness-overall">
          {readinessWords(r.overall, platform)}
        </span>
        <span className="small">{withZones(r.summary, customerTz)}</span>
        <button onClick={load}>Check again</button>
      </header>
      <ul className="readiness-list">
        {r.items.map((i) => (
          <li key={i.key} data-item={i.key}>
            <span className={`badge ${ITEM_TONE[i.state]}`}>{ITEM_WORDS[i.state]}</span>
            <span className="readiness-label">{i.label}</span>
            <span className="readiness-detail">{withZones(i.detail, customerTz)}</span>
            <span className="small muted" title={i.asOf ?? ''}>
              {i.asOf ? `as of ${distanceText(Date.parse(i.asOf) - checked)}` : ''}
            </span>
            <FixLine item={i} fixes={fixes} />
          </li>
        ))}
      </ul>
    </section>
  );
}
