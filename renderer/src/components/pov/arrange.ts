import type { PovView } from '../../../../shared/contract/pov';
import type { ReadinessLevel } from '../../../../shared/contract/readiness';
import { readinessWords } from '../../../../shared/contract/values';

export const SORT_KEYS = ['created', 'name', 'state', 'readiness', 'autoDelete'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface Arrangement {
  /** Matches the name, the template or the state anywhere, or the start of the readiness badge's words, case-insensitively. */
  query: string;
  readiness: ReadinessLevel | 'all';
  sort: SortKey;
  descending: boolean;
}

/** Newest first, as the core lists them. */
export const DEFAULT_ARRANGEMENT: Arrangement = { query: '', readiness: 'all', sort: 'created', descending: true };

const READINESS_ORDER: Record<string, number> = { not_ready: 0, attention: 1, ready: 2 };

function key(p: PovView, k: SortKey): string | number {
  switch (k) {
    case 'created':
      return p.createdAt;
    case 'name':
      return p.name.toLocaleLowerCase();
    case 'state':
      return `${p.state} ${p.runstate ?? ''}`;
    case 'readiness':
      return READINESS_ORDER[p.readiness?.overall ?? ''] ?? 3;
    case 'autoDelete': {
      const t = p.autoDelete?.at ? Date.parse(p.autoDelete.at) : NaN;
      return Number.isNaN(t) ? Number.MAX_SAFE_INTEGER : t; // no time sorts last
    }
  }
}

/**
 * The badge's words ("ready", "ready to rehearse", "attention", "not ready") from their start, so
 * "ready" finds the ready rows and not the "not ready" ones.
 */
function readinessMatches(p: PovView, q: string): boolean {
  return !!p.readiness && readinessWords(p.readiness.overall, p.platform).startsWith(q);
}

/** The rows the list shows, filtered and sorted (ties keep name order); pure, for tests. */
export function arrange(povs: PovView[], a: Arrangement): PovView[] {
  const q = a.query.trim().toLocaleLowerCase();
  const shown = povs.filter(
    (p) =>
      (a.readiness === 'all' || p.readiness?.overall === a.readiness) &&
      (!q || [p.name, p.templateName, p.state, p.runstate ?? ''].some((s) => s.toLocaleLowerCase().includes(q)) || readinessMatches(p, q)),
  );
  const dir = a.descending ? -1 : 1;
  return shown.sort((x, y) => {
    const kx = key(x, a.sort);
    const ky = key(y, a.sort);
    if (kx !== ky) return (kx < ky ? -1 : 1) * dir;
    return x.name.localeCompare(y.name) || x.id.localeCompare(y.id);
  });
}
