import type { ReadinessLevel } from '../../../../shared/contract/readiness';
import { READINESS_WORDS } from '../../../../shared/contract/values';
import type { Arrangement, SortKey } from './arrange';

const SORT_WORDS: Record<SortKey, string> = {
  created: 'Created',
  name: 'Name',
  state: 'State',
  readiness: 'Readiness',
  autoDelete: 'Auto-delete time',
};

/** Filter and sort the POV list: by name/template/state/readiness text, readiness, and the sort key. */
export function ListControls({
  value,
  onChange,
  shown,
  total,
}: {
  value: Arrangement;
  onChange(a: Arrangement): void;
  shown: number;
  total: number;
}) {
  return (
    <div className="row pov-controls" role="search" aria-label="Filter and sort POVs">
      <label>
        <span className="small muted">Filter </span>
        <input
          type="search"
          aria-label="Filter POVs"
          placeholder="name, template, state, ready"
          value={value.query}
          onChange={(e) => onChange({ ...value, query: e.target.value })}
        />
      </label>
      <label>
        <span className="small muted">Readiness </span>
        <select
          aria-label="Readiness filter"
          value={value.readiness}
          onChange={(e) => onChange({ ...value, readiness: e.target.value as ReadinessLevel | 'all' })}
        >
          <option value="all">all</option>
          {(Object.keys(READINESS_WORDS) as ReadinessLevel[]).map((r) => (
            <option key={r} value={r}>
              {READINESS_WORDS[r]}
            </option>
          ))}
        </select>
      </label>
      <label>
        <span className="small muted">Sort by </span>
        <select aria-label="Sort POVs by" value={value.sort} onChange={(e) => onChange({ ...value, sort: e.target.value as SortKey })}>
          {(Object.keys(SORT_WORDS) as SortKey[]).map((k) => (
            <option key={k} value={k}>
              {SORT_WORDS[k]}
            </option>
          ))}
        </select>
      </label>
      <button title="Reverse the order" onClick={() => onChange({ ...value, descending: !value.descending })}>
        {value.descending ? 'Descending' : 'Ascending'}
      </button>
      <span className="small muted" aria-live="polite">
        {shown === total ? `${total} POV${total === 1 ? '' : 's'}` : `${shown} of ${total} POVs shown`}
      </span>
    </div>
  );
}
