import { useEffect, useState } from 'react';
import type { BakeArgs, BakedImage } from '../../../../shared/contract/bake';
import { BAKE_STAGES } from '../../../../shared/contract/values';
import { api, errorText } from '../../api';
import { useJobs } from '../../state/jobs';
import { ProgressBar } from '../progress-bar';
import { ConsoleTail } from '../vm/console-tail';
import { ErrorAlert } from '../error-alert';

const STAGE_LABEL: Record<(typeof BAKE_STAGES)[number], string> = {
  source: 'Source',
  inspect: 'Detect OS',
  packages: 'Fetch packages',
  bake: 'Install (in the guest)',
  register: 'Add to local VMs',
  proof: 'Proof boot',
};

/**
 * "Bake a template": a source (an image file, or a minimal Debian built from Debian's packages),
 * options, then the job's stages with progress, the proof VM's live console and Cancel.
 */
export function BakePanel({ onBaked }: { onBaked: () => void }) {
  const [kind, setKind] = useState<'debian' | 'file'>('debian');
  const [path, setPath] = useState('');
  const [name, setName] = useState('control-node');
  const [docker, setDocker] = useState<'auto' | 'skip'>('auto');
  const [extra, setExtra] = useState('');
  const [size, setSize] = useState('');
  const [jobId, setJobId] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const follow = useJobs((s) => s.follow);
  const job = useJobs((s) => (jobId ? s.jobs[jobId] : undefined));
  useEffect(() => follow(), [follow]);
  const running = !!job && (job.state === 'queued' || job.state === 'running');
  useEffect(() => {
    if (job?.state === 'succeeded') onBaked();
  }, [job?.state, onBaked]);

  const start = () => {
    setError(null);
    const args: BakeArgs = {
      source: kind === 'debian' ? { debian: 'bookworm' } : path.trim(),
      name: name.trim(),
      docker,
      ...(extra.trim() ? { extraPackages: extra.split(/[\s,]+/).filter(Boolean) } : {}),
      ...(size.trim() ? { sizeGib: Number(size) } : {}),
    };
    api
      .call('bake.start', args)
      .then((r) => setJobId(r.jobId))
      .catch((e) => setError(errorText(e)));
  };
  const step = job?.progress.step ?? '';
  const current = BAKE_STAGES.indexOf(step as (typeof BAKE_STAGES)[number]);
  const proofVm = /proof VM ([0-9a-f]{8})/.exec(job?.progress.message ?? '')?.[1] ?? null;

  return (
    <div className="panel bake-panel" role="region" aria-label="Bake a template">
      <h3>Bake a template</h3>
      <p className="muted">
        Installs the runner below, Docker (enabled at boot) and open-vm-tools into an image, boots it in the local vm-manager to prove the
        runner runs a payload, and keeps it for export to Skytap.
      </p>
      <fieldset disabled={running}>
        <legend>Source</legend>
        <label>
          <input type="radio" checked={kind === 'debian'} onChange={() => setKind('debian')} /> Minimal Debian 12 (bookworm), built from
          Debian packages
        </label>
        <label>
          <input type="radio" checked={kind === 'file'} onChange={() => setKind('file')} /> Image file (qcow2, raw, vmdk, .ova, .ovf)
        </label>
        {kind === 'file' && (
          <label>
            Path{' '}
            <input aria-label="Image path" value={path} onChange={(e) => setPath(e.target.value)} placeholder="/home/me/images/linux.ova" />
          </label>
        )}
      </fieldset>
      <fieldset disabled={running} className="bake-options">
        <legend>Options</legend>
        <label>
          Name <input aria-label="Template name" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Docker{' '}
          <select aria-label="Docker" value={docker} onChange={(e) => setDocker(e.target.value as 'auto' | 'skip')}>
            <option value="auto">install when missing (docker.io)</option>
            <option value="skip">leave out</option>
          </select>
        </label>
        <label>
          Extra packages{' '}
          <input aria-label="Extra packages" value={extra} onChange={(e) => setExtra(e.target.value)} placeholder="htop jq" />
        </label>
        <label>
          Disk size (GiB){' '}
          <input aria-label="Disk size" type="number" min={2} value={size} onChange={(e) => setSize(e.target.value)} placeholder="as is" />
        </label>
      </fieldset>
      <div className="templates-actions">
        <button className="primary" disabled={running || !name.trim() || (kind === 'file' && !path.trim())} onClick={start}>
          Bake
        </button>
        {running && jobId && (
          <button onClick={() => void api.call('jobs.cancel', { id: jobId }).catch((e) => setError(errorText(e)))}>Cancel</button>
        )}
      </div>
      <ErrorAlert error={error} />
      {job && (
        <div className="bake-progress">
          <ol className="bake-stages" aria-label="Bake stages">
            {BAKE_STAGES.map((s, i) => (
              <li key={s} className={i < current || job.state === 'succeeded' ? 'done' : i === current ? 'current' : ''}>
                {STAGE_LABEL[s]}
              </li>
            ))}
          </ol>
          <ProgressBar fraction={job.progress.fraction} label="Bake progress" />
          <p role="status">
            {job.state}: {job.progress.message}
          </p>
          {job.error && <pre className="error bake-error">{job.error.message}</pre>}
          {proofVm && running && step === 'proof' && (
            <div className="bake-console" aria-label="Proof boot console">
              <ConsoleTail id={proofVm} />
            </div>
          )}
        </div>
      )}
    </div>
  );
}

/** Baked images: manifest, proof and Export. */
export function BakedList({ images, error }: { images: BakedImage[]; error: string | null }) {
  const [format, setFormat] = useState<Record<string, 'ova' | 'ovf' | 'vmdk'>>({});
  const [jobs, setJobs] = useState<Record<string, string>>({});
  const [failed, setFailed] = useState<string | null>(null);
  const all = useJobs((s) => s.jobs);
  const follow = useJobs((s) => s.follow);
  useEffect(() => follow(), [follow]);
  const exportIt = (name: string) => {
    setFailed(null);
    api
      .call('bake.export', { imageId: name, format: format[name] ?? 'ova' })
      .then((r) => setJobs((j) => ({ ...j, [name]: r.jobId })))
      .catch((e) => setFailed(errorText(e)));
  };
  return (
    <div className="panel" role="region" aria-label="Baked templates">
      <h3>Baked templates</h3>
      {error && <p className="error">{error}</p>}
      <ErrorAlert error={failed} />
      {images.length === 0 && <p className="muted">None yet.</p>}
      {images.map((b) => {
        const ej = jobs[b.name] ? all[jobs[b.name]!] : undefined;
        const files = ej?.state === 'succeeded' ? (ej.result as { files: { path: string }[] }).files.map((f) => f.path) : b.exports;
        return (
          <details key={b.name} className="baked">
            <summary>
              <strong>{b.name}</strong> — {b.manifest.guest.product}; Docker {b.manifest.docker}; proof{' '}
              {b.proof ? (b.proof.passed ? `passed in ${b.proof.seconds} s` : 'failed') : 'not run'}
            </summary>
            <p>
              Runner <code>{b.manifest.runner.path}</code> sha256 <code>{b.manifest.runner.sha256}</code>
            </p>
            {b.proof && <p>{b.proof.message}</p>}
            {b.proof?.attestation && (
              <p aria-label={`Proof attestation of ${b.name}`}>
                {b.proof.attestation.required
                  ? `Proof boot attested: ${b.proof.attestation.verified ? 'verified' : 'not verified'} — ${b.proof.attestation.message}`
                  : `Proof boot ${b.proof.attestation.message}`}
              </p>
            )}
            <pre className="baked-manifest" aria-label={`Build manifest of ${b.name}`}>
              {JSON.stringify(b.manifest, null, 2)}
            </pre>
            <div className="templates-actions">
              <select
                aria-label={`Export format of ${b.name}`}
                value={format[b.name] ?? 'ova'}
                onChange={(e) => setFormat((f) => ({ ...f, [b.name]: e.target.value as 'ova' }))}
              >
                <option value="ova">OVA</option>
                <option value="ovf">OVF + VMDK + manifest</option>
                <option value="vmdk">VMDK only</option>
              </select>
              <button disabled={!!ej && (ej.state === 'running' || ej.state === 'queued')} onClick={() => exportIt(b.name)}>
                Export
              </button>
              {ej && <span role="status">{ej.state === 'failed' ? ej.error?.message : ej.progress.message}</span>}
            </div>
            {files.length > 0 && (
              <ul aria-label={`Exports of ${b.name}`}>
                {files.map((f) => (
                  <li key={f}>
                    <code>{f}</code>
                  </li>
                ))}
              </ul>
            )}
          </details>
        );
      })}
    </div>
  );
}
