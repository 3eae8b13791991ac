import { useCallback, useEffect, useState } from 'react';
import type { LabTemplateView } from '../../../../shared/contract/templates';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';
import { NewLocalTemplate } from './new-local-template';

/**
 * "Local templates": what a POV on this laptop (the `local` lab platform) is made from. The
 * bundled test template first (built in, cannot be deleted), then the user's; "New local
 * template" makes one from the vm-manager's baked or imported images.
 */
export function LocalTemplatesPanel() {
  const [templates, setTemplates] = useState<LabTemplateView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [confirming, setConfirming] = useState<string | null>(null);
  const load = useCallback(() => {
    api
      .call('templates.list', { platform: 'local' })
      .then((r) => {
        setTemplates(r.templates);
        setError(null);
      })
      .catch((e) => setError(`Could not list local templates: ${errorText(e)}`));
  }, []);
  useEffect(load, [load]);

  const remove = (t: LabTemplateView) => {
    setError(null);
    setConfirming(null);
    api
      .call('templates.deleteLocal', { id: t.id })
      .then(load)
      .catch((e) => setError(`Could not delete ${t.name}: ${errorText(e)}`));
  };

  return (
    <div className="panel local-templates" role="region" aria-label="Local templates">
      <h3>Local templates</h3>
      <p className="muted">
        A POV on this laptop is made from a local template: a named set of images in the vm-manager, each with a VM name, OS and size.
        Deleting a template leaves the VMs of POVs made from it alone.
      </p>
      <ErrorAlert error={error} />
      {templates === null && !error && <p className="muted">Loading…</p>}
      {templates && (
        <ul className="local-template-list">
          {templates.map((t) => (
            <li key={t.id} aria-label={t.name}>
              <div className="local-template-head">
                <strong>{t.name}</strong>
                {t.builtIn && <span className="badge">built-in</span>}
                <code className="muted">{t.id}</code>
                {!t.builtIn && confirming !== t.id && (
                  <button className="danger" aria-label={`Delete ${t.name}`} onClick={() => setConfirming(t.id)}>
                    Delete
                  </button>
                )}
                {confirming === t.id && (
                  <span role="group" aria-label={`Confirm delete ${t.name}`} className="templates-actions">
                    <button className="danger" onClick={() => remove(t)}>
                      Delete template
                    </button>
                    <button onClick={() => setConfirming(null)}>Keep</button>
                  </span>
                )}
              </div>
              {t.description && <p className="muted">{t.description}</p>}
              <ul className="local-template-vms">
                {t.vms.map((v) => (
                  <li key={v.name}>
                    {v.name}: {v.image ?? 'no image'} ({v.os})
                  </li>
                ))}
              </ul>
            </li>
          ))}
        </ul>
      )}
      {creating ? (
        <NewLocalTemplate
          onCreated={() => {
            setCreating(false);
            load();
          }}
          onCancel={() => setCreating(false)}
        />
      ) : (
        <button className="primary" onClick={() => setCreating(true)}>
          New local template
        </button>
      )}
    </div>
  );
}
