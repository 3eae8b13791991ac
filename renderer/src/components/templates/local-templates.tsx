import { useCallback, useEffect, useState } from 'react';
import type { LabTemplateView } from '../../../../shared/contract/lab-templates';
import type { VmImage } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';
import { NewLocalTemplate } from './new-local-template';

/** A local VM's size as the list shows it: "2 CPUs, 2048 MiB, 20 GiB disk, attested" (what the template sets). */
export function vmSizeText(v: LabTemplateView['vms'][number]): string {
  const parts = [
    v.cpus !== undefined ? `${v.cpus} ${v.cpus === 1 ? 'CPU' : 'CPUs'}` : null,
    v.memoryMib !== undefined ? `${v.memoryMib} MiB` : null,
    v.diskGib !== undefined ? `${v.diskGib} GiB disk` : null,
    v.requireAttestation ? 'attested' : null,
  ].filter((p): p is string => p !== null);
  return parts.join(', ');
}

/**
 * "Local templates": what a POV on this laptop (the `local` lab platform) is made from. The
 * bundled test template first (built in, cannot be changed or deleted), then the user's; "New
 * local template" makes one from the vm-manager's baked or imported images, and Edit changes one in place.
 */
export function LocalTemplatesPanel() {
  const [templates, setTemplates] = useState<LabTemplateView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  // The template whose form is open for changes (null: none).
  const [editing, setEditing] = useState<LabTemplateView | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  // The vm-manager's images, to mark a VM whose image is gone (null: not read, or no manager).
  const [images, setImages] = useState<VmImage[] | null>(null);
  const load = useCallback(() => {
    api
      .call('labTemplates.list', { platform: 'local' })
      .then((r) => {
        setTemplates(r.templates);
        setError(null);
      })
      .catch((e) => setError(`Could not list local templates: ${errorText(e)}`));
    api
      .call('vm.images', {})
      .then((r) => setImages(r.images))
      .catch(() => setImages(null));
  }, []);
  const gone = (t: LabTemplateView, image: string | null) =>
    images !== null && image !== null && !images.some((i) => i.name === image)
      ? t.builtIn
        ? 'built on the first rehearsal'
        : 'gone from the vm-manager'
      : null;
  useEffect(load, [load]);

  const remove = (t: LabTemplateView) => {
    setError(null);
    setConfirming(null);
    api
      .call('labTemplates.delete', { id: t.id })
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
                  <>
                    <button
                      aria-label={`Edit ${t.name}`}
                      disabled={editing?.id === t.id}
                      onClick={() => {
                        setCreating(false);
                        setEditing(t);
                      }}
                    >
                      Edit
                    </button>
                    <button className="danger" aria-label={`Delete ${t.name}`} onClick={() => setConfirming(t.id)}>
                      Delete
                    </button>
                  </>
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
                {t.vms.map((v) => {
                  const missing = gone(t, v.image);
                  const size = vmSizeText(v);
                  return (
                    <li key={v.name}>
                      {v.name}: {v.image ?? 'no image'} ({v.os}){size && <span className="muted"> · {size}</span>}
                      {missing && <span className={t.builtIn ? 'muted small' : 'warn small'}> — image {missing}</span>}
                    </li>
                  );
                })}
              </ul>
              {!t.builtIn && t.vms.some((v) => gone(t, v.image)) && (
                <p className="warn small" role="status">
                  A POV from {t.name} would fail: bake or import the missing image again under the same name, or delete this template.
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
      {creating || editing ? (
        <NewLocalTemplate
          key={editing?.id ?? 'new'}
          {...(editing ? { editing } : {})}
          onCreated={() => {
            setCreating(false);
            setEditing(null);
            load();
          }}
          onCancel={() => {
            setCreating(false);
            setEditing(null);
          }}
        />
      ) : (
        <button className="primary" onClick={() => setCreating(true)}>
          New local template
        </button>
      )}
    </div>
  );
}
