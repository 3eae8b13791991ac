import { useEffect, useMemo, useState } from 'react';
import type { TemplateView } from '../../../../shared/contract/skytap';
import { api, errorText } from '../../api';
import { fromLocalInput, toLocalInput } from '../share/datetime';
import { useFocusTrap } from '../focus-trap';
import { TimeZoneInput } from './customer-tz';
import { bothZones } from './time';
import { ErrorAlert } from '../error-alert';

/** Create POV: a searchable list of the templates this account (or project) can see, and a name. */
export function CreatePovDialog({
  onClose,
  onCreate,
}: {
  onClose(): void;
  onCreate(templateId: string, name: string, autoDeleteAt?: string, customerTz?: string): Promise<void>;
}) {
  const [templates, setTemplates] = useState<TemplateView[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [query, setQuery] = useState('');
  const [picked, setPicked] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Auto-delete: the default from the setting (30 days unless changed), editable here.
  const [deleteAt, setDeleteAt] = useState('');
  // The customer's zone (optional): every time of the POV is shown in it beside the SE's.
  const [customerTz, setCustomerTz] = useState('');
  useEffect(() => {
    api
      .call('notify.getSettings', {})
      .then((s) => setDeleteAt((v) => v || toLocalInput(new Date(Date.now() + s.autoDeleteDays * 86_400_000).toISOString())))
      .catch(() => undefined);
  }, []);

  useEffect(() => {
    let live = true;
    api.call('skytap.listTemplates', {})
      .then((r) => live && setTemplates(r.templates))
      .catch((e) => live && setLoadError(errorText(e)));
    return () => {
      live = false;
    };
  }, []);

  const shown = useMemo(() => {
    const q = query.trim().toLowerCase();
    const all = templates ?? [];
    return q ? all.filter((t) => t.name.toLowerCase().includes(q) || t.id.includes(q) || (t.description ?? '').toLowerCase().includes(q)) : all;
  }, [templates, query]);

  const chosen = templates?.find((t) => t.id === picked) ?? null;
  const canCreate = !!chosen && name.trim().length > 0 && !busy;

  async function submit() {
    if (!chosen) return;
    setBusy(true);
    setError(null);
    try {
      const at = fromLocalInput(deleteAt);
      await onCreate(chosen.id, name.trim(), at ?? undefined, customerTz.trim() || undefined);
      onClose();
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  }

  const trap = useFocusTrap<HTMLDivElement>(onClose);
  return (
    <div className="pov-dialog-backdrop" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <div ref={trap} tabIndex={-1} className="pov-dialog" role="dialog" aria-modal="true" aria-label="Create POV">
        <h3>Create POV</h3>
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
            <p className="error">No templates are visible to this account. A POV cannot be created from an empty catalogue; see Settings → Skytap → Test connection.</p>
          )}
          {templates && templates.length > 0 && shown.length === 0 && <p className="muted">No template matches “{query}”.</p>}
          {shown.length > 0 && (
            <ul className="tpl-list" role="listbox" aria-label="Templates">
              {shown.map((t) => (
                <li key={t.id} role="presentation">
                  <button role="option" aria-selected={picked === t.id} onClick={() => setPicked(t.id)} onDoubleClick={() => setPicked(t.id)}>
                    <span>
                      {t.name} {t.busy && <span className="badge warn">busy</span>}
                    </span>
                    <span className="small muted">
                      id {t.id}
                      {t.vmCount !== null ? ` · ${t.vmCount} VM${t.vmCount === 1 ? '' : 's'}` : ''}
                      {t.region ? ` · ${t.region}` : ''}
                      {t.description ? ` · ${t.description}` : ''}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
        <label className="form">
          <span>POV name</span>
          <input aria-label="POV name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} placeholder="e.g. Acme Corp evaluation" />
        </label>
        <label className="form">
          <span>Auto-delete (Skytap deletes the environment then; warnings come before)</span>
          <input type="datetime-local" aria-label="Auto-delete" value={deleteAt} onChange={(e) => setDeleteAt(e.target.value)} />
        </label>
        <label className="form">
          <span>Customer time zone (optional; times are shown in it beside yours)</span>
          <TimeZoneInput label="Customer time zone" value={customerTz} onChange={setCustomerTz} />
        </label>
        {fromLocalInput(deleteAt) && customerTz.trim() && (
          <p className="small muted" data-testid="create-times">
            Deletes {bothZones(fromLocalInput(deleteAt)!, customerTz.trim())}
          </p>
        )}
        <ErrorAlert error={error} />
        <div className="row" style={{ justifyContent: 'flex-end' }}>
          <button onClick={onClose}>Cancel</button>
          <button className="primary" disabled={!canCreate} onClick={() => void submit()}>
            {busy ? 'Creating…' : 'Create'}
          </button>
        </div>
      </div>
    </div>
  );
}
