import { useState } from 'react';
import type { VmConnection } from '../../../../shared/contract/vm';
import { errorText } from '../../api';
import { rehearse } from '../../state/lab';
import { ErrorAlert } from '../error-alert';

function rehearsalName(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `Rehearsal ${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())} ${pad(now.getHours())}:${pad(now.getMinutes())}`;
}

/**
 * The embedded default: with no Skytap account saved, one click makes a local POV from the bundled
 * test template (the test image, built first when the vm-manager lacks it), so the app's main job
 * runs on a fresh machine with nothing configured. With an account saved it stays, as one button
 * (`compact`), wherever a vm-manager is connected.
 */
export function RehearseOffer({
  connection,
  onStarted,
  compact = false,
}: {
  connection: VmConnection | null;
  onStarted(jobId: string): void;
  compact?: boolean;
}) {
  const [step, setStep] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const remote = connection?.mode === 'remote';
  const where = remote ? 'the remote vm-manager' : 'this laptop';

  async function go() {
    setError(null);
    try {
      const jobId = await rehearse({ connection, name: rehearsalName(new Date()), onStep: (_s, message) => setStep(message) });
      onStarted(jobId);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setStep(null);
    }
  }

  const label = remote ? 'Rehearse on the remote vm-manager' : 'Rehearse on this laptop';
  // with a Skytap account saved, the offer shrinks to one line: a rehearsal stays one click away
  if (compact) {
    return (
      <div className="row rehearse-compact" role="region" aria-label="Rehearse">
        <button disabled={step !== null} onClick={() => void go()} title={`A POV from the bundled test template on ${where}`}>
          {label}
        </button>
        {step && (
          <span className="small muted" role="status">
            {step}
          </span>
        )}
        <ErrorAlert error={error} />
      </div>
    );
  }
  return (
    <div className="panel rehearse" role="region" aria-label="Rehearse">
      <h3>No Skytap account yet? Rehearse on {where}.</h3>
      <p className="small muted">
        A POV on {remote ? `the vm-manager at ${connection?.url ?? '(no URL)'}` : "this laptop's own vm-manager (QEMU)"}, from the bundled
        test template: one small attested VM from the test image. It powers on, shows its console and attestation, and is destroyed like any
        POV. Save a Skytap account in Settings to create POVs on Skytap.
      </p>
      <button className="primary" disabled={step !== null} onClick={() => void go()}>
        {label}
      </button>
      {step && (
        <p className="small muted" role="status">
          {step}
        </p>
      )}
      <ErrorAlert error={error} />
    </div>
  );
}
