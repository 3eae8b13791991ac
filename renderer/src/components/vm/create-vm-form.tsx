import { useEffect, useState } from 'react';
import type { VmImage } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { goldenSizeWarning, GOLDEN_VM_SIZE } from '../../../../shared/golden-size';
import { ErrorAlert } from '../error-alert';

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The create form; the work runs as a job the page follows (progress, cancel). */
export function CreateVmForm({ images, onStarted }: { images: VmImage[]; onStarted: (jobId: string) => void }) {
  const [name, setName] = useState('');
  const [image, setImage] = useState(images[0]?.name ?? '');
  // giantswarm's defaults, which are also the size golden values are learned at
  const [cpus, setCpus] = useState<number>(GOLDEN_VM_SIZE.cpus);
  const [memoryMib, setMemory] = useState<number>(GOLDEN_VM_SIZE.memoryMiB);
  const [diskGib, setDisk] = useState(20);
  const [userData, setUserData] = useState('');
  const chosen = images.find((i) => i.name === image) ?? null;
  const [attest, setAttest] = useState(false);
  const [nat, setNat] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!images.some((i) => i.name === image) && images[0]) setImage(images[0].name);
  }, [images, image]);
  useEffect(
    () => setAttest(chosen?.references != null || (chosen?.goldenPcrs ?? 0) > 0),
    [chosen?.name, chosen?.goldenPcrs, chosen?.references],
  );

  // Reference measurements hold at any size; golden values only at the sizes a learn boot ran at.
  const sizeWarning = chosen?.references ? null : goldenSizeWarning(cpus, memoryMib, chosen?.goldenSizes ?? []);
  const nameProblem = name && !LABEL.test(name) ? 'lower-case letters, digits and -, not starting or ending with -' : null;
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!name || nameProblem) return setError(`Name: ${nameProblem ?? 'required'}`);
    setBusy(true);
    setError(null);
    try {
      const { jobId } = await api.call('vm.create', {
        name,
        image,
        cpus,
        memoryMib,
        diskGib,
        requireAttestation: attest,
        ...(nat ? { network: 'nat' as const } : {}),
        ...(userData ? { userData } : {}),
      });
      onStarted(jobId);
      setName('');
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel form vm-create" aria-label="Create VM" onSubmit={submit}>
      <h3>Create a VM</h3>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value.trim())} placeholder="demo-1" aria-invalid={!!nameProblem} />
        {nameProblem && <span className="error small">{nameProblem}</span>}
      </label>
      <label>
        Image
        <select value={image} onChange={(e) => setImage(e.target.value)}>
          {images.map((i) => (
            <option key={i.name} value={i.name}>
              {i.name} ({i.kind})
            </option>
          ))}
        </select>
      </label>
      <div className="row">
        <label>
          CPUs <input type="number" min={1} max={64} value={cpus} onChange={(e) => setCpus(Number(e.target.value))} />
        </label>
        <label>
          Memory (MiB) <input type="number" min={256} step={256} value={memoryMib} onChange={(e) => setMemory(Number(e.target.value))} />
        </label>
        <label>
          Disk (GiB) <input type="number" min={1} value={diskGib} onChange={(e) => setDisk(Number(e.target.value))} />
        </label>
      </div>
      <label>
        User-data (optional)
        <textarea
          rows={3}
          value={userData}
          onChange={(e) => setUserData(e.target.value)}
          placeholder="served at /skytap/vms/self/user_data"
        />
      </label>
      <label className="vm-check">
        <input type="checkbox" checked={attest} onChange={(e) => setAttest(e.target.checked)} /> Require attestation (user-data only after
        the initrd quote verifies)
      </label>
      {attest && chosen && !chosen.references && chosen.goldenPcrs === 0 && (
        <p className="warn small">
          Image {chosen.name} has no golden PCR values yet, so its quotes cannot verify and the VM will not reach ready. Use &quot;Learn
          golden values&quot; on the image above, or create without attestation.
        </p>
      )}
      {attest && chosen?.firmwareChanged && <p className="warn small">{chosen.firmwareChanged}</p>}
      {attest && chosen && chosen.goldenPcrs > 0 && sizeWarning && (
        <p className="warn small" role="status">
          Image {chosen.name}: {sizeWarning}.
        </p>
      )}
      <label className="vm-check">
        <input type="checkbox" checked={nat} onChange={(e) => setNat(e.target.checked)} /> Outbound network (NAT): the guest can also open
        connections to this machine&apos;s loopback services and beyond. Off: it reaches only the metadata service, and you reach it over
        SSH.
      </label>
      <ErrorAlert error={error} />
      <div className="row">
        <button className="primary" type="submit" disabled={busy || !image}>
          Create
        </button>
      </div>
    </form>
  );
}
