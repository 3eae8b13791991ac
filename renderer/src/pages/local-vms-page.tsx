import { useEffect, useRef, useState } from 'react';
import type { JobRecord } from '../../../shared/contract';
import { JOB_KIND, VM_JOB_KINDS } from '../../../shared/contract/job-kinds';
import { api, errorText } from '../api';
import { EmptyState } from '../components/empty-state';
import { ProgressBar } from '../components/progress-bar';
import { ConnectionPanel } from '../components/vm/connection-panel';
import { CreateVmForm } from '../components/vm/create-vm-form';
import { HostReport } from '../components/vm/host-report';
import { ImagesPanel } from '../components/vm/images-panel';
import { VmDetailPanel, openVmConsole, openVmSsh } from '../components/vm/vm-detail';
import { VmList } from '../components/vm/vm-list';
import { isActive, useJobs } from '../state/jobs';
import { useVms } from '../state/vms';
import { ErrorAlert } from '../components/error-alert';
import './local-vms-page.css';

function JobLine({ job, onCancel }: { job: JobRecord; onCancel: (id: string) => void }) {
  return (
    <li className="vm-job" data-testid="vm-job">
      <div className="row">
        <strong>{job.title}</strong>
        <span className="muted small">{job.progress.step || job.state}</span>
        {isActive(job) && (
          <button onClick={() => onCancel(job.id)} title="Stops the work; a half-made VM is deleted">
            Cancel
          </button>
        )}
      </div>
      {isActive(job) && <ProgressBar fraction={job.progress.fraction} label={job.progress.step || job.state} />}
      {job.progress.message && isActive(job) && <div className="muted small">{job.progress.message}</div>}
      {job.state === 'failed' && job.error && <div className="error small">{job.error.message}</div>}
      {job.state === 'cancelled' && <div className="muted small">{job.error?.message ?? 'cancelled'}</div>}
    </li>
  );
}

export default function LocalVmsPage() {
  const { host, hostError, hostLoading, images, vms, listError, connection, loadHost, refresh, follow: followVms } = useVms();
  const follow = useJobs((s) => s.follow);
  const jobs = useJobs((s) => s.jobs);
  const [mine, setMine] = useState<string[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const finished = useRef(new Set<string>());

  useEffect(() => follow(), [follow]);
  // VMs and images change by `vm.updated` / `vm.imagesUpdated` events after one read; no timer here
  useEffect(() => followVms(), [followVms]);
  useEffect(() => {
    void loadHost();
    void refresh();
  }, [loadHost, refresh]);

  // The page's jobs: the ones started here plus any vm job still running (e.g. from the CLI).
  const vmJobs = Object.values(jobs)
    .filter((j) => VM_JOB_KINDS.includes(j.kind) && (mine.includes(j.id) || isActive(j)))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  useEffect(() => {
    for (const j of vmJobs) {
      if (!isActive(j) && !finished.current.has(j.id)) {
        finished.current.add(j.id);
        void refresh();
      }
    }
  });

  const started = (id: string) => setMine((m) => [id, ...m]);
  const openConsole = (vm: { id: string; name: string }, interactive: boolean) => {
    setError(null);
    openVmConsole(vm, interactive, setError);
  };
  const openSsh = (vm: { id: string; name: string; sshPort: number | null }) => {
    setError(null);
    openVmSsh(vm, setError);
  };
  const cancel = (id: string) => api.call('jobs.cancel', { id }).catch((e) => setError(errorText(e)));
  const buildImage = () =>
    api
      .call('vm.imageBuildTest', {})
      .then(({ jobId }) => started(jobId))
      .catch((e) => setError(errorText(e)));
  const sel = vms?.find((v) => v.id === selected) ?? null;
  const building = vmJobs.some((j) => j.kind === JOB_KIND.vmImageBuildTest && isActive(j));

  return (
    <section className="page local-vms">
      <header className="page-head">
        <h2>Local VMs</h2>
        <button onClick={() => void loadHost(true)} disabled={hostLoading}>
          Re-check host
        </button>
        <button onClick={() => void refresh()}>Refresh</button>
      </header>
      <ErrorAlert error={error} />

      {hostLoading && !host && (
        <p className="muted">Starting the local vm-manager and probing this host (a throwaway VM per accelerator)…</p>
      )}
      {hostError && (
        <div className="panel">
          <h3>The vm-manager is not available</h3>
          <p className="error">{hostError}</p>
        </div>
      )}
      {host && <HostReport host={host} />}
      <ConnectionPanel
        key={connection?.mode ?? 'none'}
        connection={connection}
        onChanged={() => {
          void loadHost();
          void refresh();
        }}
      />

      {vmJobs.length > 0 && (
        <div className="panel">
          <h3>In progress</h3>
          <ul className="vm-jobs">
            {vmJobs.map((j) => (
              <JobLine key={j.id} job={j} onCancel={cancel} />
            ))}
          </ul>
        </div>
      )}

      {images && images.length === 0 && (
        <EmptyState title="No images yet">
          <p>
            VMs boot from an image in the vm-manager's store. The test image (a Debian cloud kernel, busybox and tpm2-tools in an initramfs,
            with the guest agent) is built offline from this machine's packages in seconds.
          </p>
          <button className="primary" onClick={buildImage} disabled={building}>
            Build the test image
          </button>
        </EmptyState>
      )}
      {images && images.length > 0 && (
        <ImagesPanel
          images={images}
          jobs={Object.values(jobs).filter((j) => mine.includes(j.id) || isActive(j))}
          onStarted={started}
          onSaved={() => void refresh()}
        />
      )}
      {images && images.length > 0 && <CreateVmForm images={images} onStarted={started} />}

      <ErrorAlert error={listError} />
      {vms && vms.length === 0 && (
        <EmptyState title="No VMs">Create one above; it is listed here with its state while it boots.</EmptyState>
      )}
      {vms && vms.length > 0 && (
        <VmList
          vms={vms}
          selected={selected}
          onSelect={setSelected}
          onChanged={() => void refresh()}
          onConsole={openConsole}
          onSsh={openSsh}
        />
      )}

      {sel && <VmDetailPanel vm={sel} remote={connection?.mode === 'remote'} onClose={() => setSelected(null)} />}
    </section>
  );
}
