import { useMemo, useState } from 'react';
import type { LabPlatformId } from '../../state/lab';
import { ErrorAlert } from '../error-alert';

/** One row of labTemplates.list (LabTemplateView): Skytap's templates, or the local ones. */
export interface TemplateRow {
  id: string;
  name: string;
  description: string | null;
  builtIn: boolean;
  vms: { name: string; os: string; image: string | null }[];
}

function summary(t: TemplateRow): string {
  const parts = [`id ${t.id}`];
  if (t.vms.length > 0)
    parts.push(
      `${t.vms.length} VM${t.vms.length === 1 ? '' : 's'}: ${t.vms.map((v) => (v.image ? `${v.name} (${v.image})` : v.name)).join(', ')}`,
    );
  if (t.description) parts.push(t.description);
  return parts.join(' · ');
}

/** A searchable list of one platform's templates; the choice is a listbox option. */
export function TemplatePicker({
  platform,
  templates,
  loadError,
  picked,
  onPick,
}: {
  platform: LabPlatformId;
  templates: TemplateRow[] | null;
  loadError: string | null;
  picked: string | null;
  onPick(id: string): void;
}) {
  const [query, setQuery] = useState('');
  const shown = useMemo(() => {
    const q = query.trim().toLowerCase();
    const all = templates ?? [];
    return q
      ? all.filter(
          (t) => t.name.toLowerCase().includes(q) || t.id.toLowerCase().includes(q) || (t.description ?? '').toLowerCase().includes(q),
        )
      : all;
  }, [templates, query]);
  return (
    <>
      <input
        type="search"
        placeholder="Search templates by name or id"
        aria-label="Search templates"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        autoFocus
      />
      <div style={{ minHeight: 0, overflow: 'auto' }}>
        <ErrorAlert error={loadError} />
        {!templates && !loadError && <p className="muted">Reading the template catalogue…</p>}
        {templates && templates.length === 0 && (
          <p className="error">
            {platform === 'skytap'
              ? 'No templates are visible to this account. A POV cannot be created from an empty catalogue; see Settings → Skytap → ' +
                'Test connection.'
              : 'No local templates. Make one on the Templates page (New local template).'}
          </p>
        )}
        {templates && templates.length > 0 && shown.length === 0 && <p className="muted">No template matches “{query}”.</p>}
        {shown.length > 0 && (
          <ul className="tpl-list" role="listbox" aria-label="Templates">
            {shown.map((t) => (
              <li key={t.id} role="presentation">
                <button role="option" aria-selected={picked === t.id} onClick={() => onPick(t.id)}>
                  <span>
                    {t.name} {t.builtIn && <span className="badge muted">built in</span>}
                  </span>
                  <span className="small muted">{summary(t)}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </>
  );
}
