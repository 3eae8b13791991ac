import { useState } from 'react';
import type { JobRecord } from '../../../../shared/contract';
import type { VmImage, VmLearnedGolden } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { isActive } from '../../state/jobs';
import { ModalDialog } from '../modal-dialog';
import { ErrorAlert } from '../error-alert';
import { JOB_KIND } from '../../../../shared/contract/job-kinds';
import { GOLDEN_VM_SIZE, vmSizeLabel } from '../../../../shared/golden-size';

/**
 * The images and what their VMs attest against. An image made here (the test image, an import, a
 * bake) has reference measurements computed from its files: its VMs attest at any size, and after
 * a firmware change "Make references again" recomputes them (no boot). An image whose boot cannot
 * be predicted says why and falls back to golden values: "Learn golden values" runs one boot of it
 * in learn mode (a job) at the size chosen above the list (the PCRs move with the VM's size, so
 * the values hold for VMs of that size only); its result is shown as a PCR table and saved only
 * when the user confirms.
 */
export function ImagesPanel({
  images,
  jobs,
  onStarted,
  onSaved,
}: {
  images: VmImage[];
  jobs: JobRecord[];
  onStarted: (jobId: string) => void;
  onSaved: () => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const [dismissed, setDismissed] = useState<string[]>([]);
  const learnJobs = jobs.filter((j) => j.kind === JOB_KIND.vmLearnGolden);
  const proposal = learnJobs.find((j) => j.state === 'succeeded' && j.result && !dismissed.includes(j.id));
  const learned = (proposal?.result ?? null) as VmLearnedGolden | null;
  const [cpus, setCpus] = useState<number>(GOLDEN_VM_SIZE.cpus);
  const [memoryMib, setMemory] = useState<number>(GOLDEN_VM_SIZE.memoryMiB);

  const learn = (image: string) => {
    setError(null);
    api
      .call('vm.learnGolden', { image, cpus, memoryMib })
      .then(({ jobId }) => onStarted(jobId))
      .catch((e) => setError(errorText(e)));
  };
  const remake = (image: string) => {
    setError(null);
    api
      .call('vm.remakeReferences', { image })
      .then(() => onSaved())
      .catch((e) => setError(errorText(e)));
  };
  const save = () => {
    if (!learned || !proposal) return;
    api
      .call('vm.saveGolden', {
        image: learned.image,
        golden: learned.golden,
        firmware: learned.firmware,
        cpus: learned.cpus,
        memoryMib: learned.memoryMib,
      })
      .then(() => {
        setDismissed((d) => [...d, proposal.id]);
        onSaved();
      })
      .catch((e) => setError(errorText(e)));
  };

  return (
    <div className="panel vm-images" aria-label="Images">
      <h3>Images</h3>
      <div className="row small">
        <span>Learn boots run at</span>
        <label>
          CPUs{' '}
          <input
            type="number"
            min={1}
            max={64}
            value={cpus}
            onChange={(e) => setCpus(Number(e.target.value))}
            aria-label="Learn boot CPUs"
          />
        </label>
        <label>
          Memory (MiB){' '}
          <input
            type="number"
            min={256}
            step={256}
            value={memoryMib}
            onChange={(e) => setMemory(Number(e.target.value))}
            aria-label="Learn boot memory (MiB)"
          />
        </label>
        <span className="muted">the values hold for attested VMs of that size only</span>
      </div>
      <ul>
        {images.map((i) => {
          const running = learnJobs.some((j) => isActive(j) && j.subject === `vm:image:${i.name}`);
          const others = i.goldenSizes.map((s) => vmSizeLabel(s.cpus, s.memoryMib)).join('; ');
          if (i.references) {
            return (
              <li key={i.name} className="row">
                <strong>{i.name}</strong>
                <span className="muted small" title={i.references}>
                  reference measurements (attested VMs of any size): {i.references}
                </span>
                {i.firmwareChanged && <span className="warn small">{i.firmwareChanged}</span>}
                {i.firmwareChanged && (
                  <button
                    onClick={() => remake(i.name)}
                    title="Computes them again from the image's files and this host's firmware (no boot)"
                  >
                    Make references again
                  </button>
                )}
              </li>
            );
          }
          return (
            <li key={i.name} className="row">
              <strong>{i.name}</strong>
              <span className="muted small">
                {i.goldenPcrs > 0
                  ? `${i.goldenPcrs} golden PCR values at ${vmSizeLabel(GOLDEN_VM_SIZE.cpus, GOLDEN_VM_SIZE.memoryMiB)}`
                  : 'no golden values at the default size'}
                {others ? `; also learned at ${others}` : i.goldenPcrs > 0 ? '' : ': attested VMs of it cannot verify yet'}
              </span>
              {i.unpredictable && <span className="muted small">no reference measurements: {i.unpredictable}</span>}
              {i.firmwareChanged && <span className="warn small">{i.firmwareChanged}</span>}
              <button
                data-learn={i.name}
                onClick={() => learn(i.name)}
                disabled={running || !i.hasPolicy}
                title="Boots the image once in learn mode, then shows the values to confirm"
              >
                {i.firmwareChanged ? 'Re-learn golden values' : 'Learn golden values'}
              </button>
            </li>
          );
        })}
      </ul>
      {learned && proposal && (
        <GoldenDialog key={proposal.id} learned={learned} onSave={save} onDiscard={() => setDismissed((d) => [...d, proposal.id])} />
      )}
      <ErrorAlert error={error} />
    </div>
  );
}

/**
 * The learned values waiting for a yes or no: a modal, since it appears on its own when the learn
 * job ends. Focus stays inside, Escape discards, and focus goes back to the image's Learn button.
 */
function GoldenDialog({ learned, onSave, onDiscard }: { learned: VmLearnedGolden; onSave(): void; onDiscard(): void }) {
  return (
    <ModalDialog
      onCancel={onDiscard}
      returnTo={() => [...document.querySelectorAll<HTMLElement>('[data-learn]')].find((b) => b.dataset.learn === learned.image) ?? null}
      className="vm-golden-proposal"
      aria-label={`Golden values of ${learned.image}`}
    >
      <p>
        One boot of <strong>{learned.image}</strong> at {vmSizeLabel(learned.cpus, learned.memoryMib)} ({learned.seconds} s) measured these
        values
        {learned.firmware ? ` with firmware ${learned.firmware.path}` : ''}. Save them as the image&apos;s golden values for VMs of that
        size? From then on an attested VM of this image and size whose firmware, kernel, command line or initrd differs is refused.
      </p>
      <table className="pcr-table">
        <thead>
          <tr>
            <th>PCR</th>
            <th>value</th>
            <th>golden</th>
          </tr>
        </thead>
        <tbody>
          {Object.keys(learned.pcrs)
            .sort((a, b) => Number(a) - Number(b))
            .map((p) => (
              <tr key={p}>
                <td>{p}</td>
                <td>
                  <code>{learned.pcrs[p]}</code>
                </td>
                <td>{p in learned.golden ? 'saved' : 'not compared'}</td>
              </tr>
            ))}
        </tbody>
      </table>
      <div className="row">
        <button className="primary" onClick={onSave}>
          Save golden values
        </button>
        <button onClick={onDiscard}>Discard</button>
      </div>
    </ModalDialog>
  );
}
