import { useEffect, useState } from 'react';
import type { OsValue } from '../../../../shared/contract/pov';
import type { CreateLocalTemplateArgs, LabTemplateView } from '../../../../shared/contract/lab-templates';
import { LOCAL_TEMPLATE_MAX_VMS, OS_VALUES } from '../../../../shared/contract/values';
import type { VmImage } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';
import { goldenSizeWarning } from '../../../../shared/golden-size';

/** One VM of the template being made, as typed (numbers stay text until Create). */
interface VmDraft {
  name: string;
  image: string;
  os: OsValue;
  cpus: string;
  memoryMib: string;
  diskGib: string;
  requireAttestation: boolean;
}

/** giantswarm's defaults, the size golden values are learned at. */
const draft = (n: number, image: string): VmDraft => ({
  name: `vm-${n}`,
  image,
  os: 'linux',
  cpus: '2',
  memoryMib: '2048',
  diskGib: '20',
  requireAttestation: false,
});

/** A saved template's VM as the form edits it. */
const fromView = (v: LabTemplateView['vms'][number], n: number): VmDraft => ({
  ...draft(n, v.image ?? ''),
  name: v.name,
  os: v.os,
  ...(v.cpus !== undefined ? { cpus: String(v.cpus) } : {}),
  ...(v.memoryMib !== undefined ? { memoryMib: String(v.memoryMib) } : {}),
  ...(v.diskGib !== undefined ? { diskGib: String(v.diskGib) } : {}),
  requireAttestation: v.requireAttestation ?? false,
});

/**
 * "New local template" (or, given `editing`, that template's form, saved in place under its id):
 * a name, then 1 to 8 VMs, each a baked or imported image from the connected vm-manager's list
 * with a VM name, OS and size. The core checks everything again (names, ranges, that each image
 * exists) and says what is wrong.
 */
export function NewLocalTemplate({
  editing,
  onCreated,
  onCancel,
}: {
  editing?: LabTemplateView;
  onCreated: () => void;
  onCancel: () => void;
}) {
  const [images, setImages] = useState<VmImage[] | null>(null);
  const [name, setName] = useState(editing?.name ?? '');
  const [description, setDescription] = useState(editing?.description ?? '');
  const [vms, setVms] = useState<VmDraft[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api
      .call('vm.images', {})
      .then((r) => {
        setImages(r.images);
        setVms(editing ? editing.vms.map((v, i) => fromView(v, i + 1)) : [draft(1, r.images[0]?.name ?? '')]);
      })
      .catch((e) => setError(`Could not read the vm-manager's images: ${errorText(e)}`));
  }, [editing]);

  const change = (i: number, patch: Partial<VmDraft>) => setVms((all) => all.map((v, j) => (j === i ? { ...v, ...patch } : v)));
  const create = () => {
    setError(null);
    setBusy(true);
    const args: CreateLocalTemplateArgs = {
      name: name.trim(),
      ...(description.trim() ? { description: description.trim() } : {}),
      vms: vms.map((v) => ({
        ...v,
        name: v.name.trim(),
        cpus: Number(v.cpus),
        memoryMib: Number(v.memoryMib),
        diskGib: Number(v.diskGib),
      })),
    };
    (editing ? api.call('labTemplates.update', { id: editing.id, ...args }) : api.call('labTemplates.create', args))
      .then(onCreated)
      .catch((e) => setError(errorText(e)))
      .finally(() => setBusy(false));
  };

  return (
    <form
      className="new-local-template"
      aria-label={editing ? `Edit local template ${editing.name}` : 'New local template'}
      onSubmit={(e) => {
        e.preventDefault();
        create();
      }}
    >
      <h4>{editing ? `Edit ${editing.name}` : 'New local template'}</h4>
      <label>
        Name <input aria-label="Local template name" value={name} onChange={(e) => setName(e.target.value)} placeholder="Two-node POV" />
      </label>
      <label>
        Description <input aria-label="Local template description" value={description} onChange={(e) => setDescription(e.target.value)} />
      </label>
      {images?.length === 0 && (
        <p className="muted">The vm-manager has no images yet: bake one above, or import one on the Local VMs page.</p>
      )}
      {vms.map((v, i) => (
        <fieldset key={i} aria-label={`VM ${i + 1}`}>
          <legend>VM {i + 1}</legend>
          <label>
            VM name <input aria-label="VM name" value={v.name} onChange={(e) => change(i, { name: e.target.value })} />
          </label>
          <label>
            Image{' '}
            <select aria-label="Image" value={v.image} onChange={(e) => change(i, { image: e.target.value })}>
              {(images ?? []).map((im) => (
                <option key={im.name} value={im.name}>
                  {im.name} ({im.kind})
                </option>
              ))}
              {/* an edited template's image that has left the vm-manager: shown, so the form says what is saved */}
              {images && v.image && !images.some((im) => im.name === v.image) && (
                <option value={v.image}>{v.image} (gone from the vm-manager)</option>
              )}
            </select>
          </label>
          <label>
            OS{' '}
            <select aria-label="OS" value={v.os} onChange={(e) => change(i, { os: e.target.value as OsValue })}>
              {OS_VALUES.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </label>
          <label>
            CPUs{' '}
            <input aria-label="CPUs" type="number" min={1} max={64} value={v.cpus} onChange={(e) => change(i, { cpus: e.target.value })} />
          </label>
          <label>
            Memory (MiB){' '}
            <input
              aria-label="Memory (MiB)"
              type="number"
              min={256}
              value={v.memoryMib}
              onChange={(e) => change(i, { memoryMib: e.target.value })}
            />
          </label>
          <label>
            Disk (GiB){' '}
            <input
              aria-label="Disk (GiB)"
              type="number"
              min={1}
              value={v.diskGib}
              onChange={(e) => change(i, { diskGib: e.target.value })}
            />
          </label>
          <label>
            <input type="checkbox" checked={v.requireAttestation} onChange={(e) => change(i, { requireAttestation: e.target.checked })} />
            {' Attested boot'}
          </label>
          {v.requireAttestation && (
            <AttestWarning
              image={(images ?? []).find((im) => im.name === v.image) ?? null}
              cpus={Number(v.cpus)}
              memoryMib={Number(v.memoryMib)}
            />
          )}
          {vms.length > 1 && (
            <button type="button" onClick={() => setVms((all) => all.filter((_, j) => j !== i))}>
              Remove VM {i + 1}
            </button>
          )}
        </fieldset>
      ))}
      <div className="templates-actions">
        <button
          type="button"
          disabled={!images || vms.length >= LOCAL_TEMPLATE_MAX_VMS}
          onClick={() => setVms((all) => [...all, draft(all.length + 1, images?.[0]?.name ?? '')])}
        >
          Add VM
        </button>
        <button type="submit" className="primary" disabled={busy || !name.trim() || vms.length === 0 || vms.some((v) => !v.image)}>
          {editing ? 'Save changes' : 'Create'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <ErrorAlert error={error} />
    </form>
  );
}

/** Why an attested VM of this image and size would wait in attesting, as the Create VM form says it. */
function AttestWarning({ image, cpus, memoryMib }: { image: VmImage | null; cpus: number; memoryMib: number }) {
  // Reference measurements made from the image's files hold at any size.
  if (!image || image.references) return null;
  if (image.goldenPcrs === 0 && image.goldenSizes.length === 0) {
    return (
      <p className="warn small" role="status">
        Image {image.name} has no golden PCR values yet: learn them on the Local VMs page, or leave this VM unattested.
      </p>
    );
  }
  if (!Number.isInteger(cpus) || !Number.isInteger(memoryMib)) return null;
  const warning = goldenSizeWarning(cpus, memoryMib, image.goldenSizes);
  return warning ? (
    <p className="warn small" role="status">
      Image {image.name}: {warning}.
    </p>
  ) : null;
}
