import type { VmHost } from '../../../../shared/contract/vm';
import { mib } from '../../state/vms';

/** The vm-manager's host report: accelerator and why, the TCG warning, tools, missing pieces. */
export function HostReport({ host }: { host: VmHost }) {
  return (
    <div className="panel vm-host" aria-label="Host report">
      <h3>
        Host {host.hostname} <span className={`badge ${host.ready ? 'ok' : 'warn'}`}>{host.ready ? 'ready for VMs' : 'not ready'}</span>
      </h3>
      {host.managerError && (
        <p className="banner error" role="alert">
          The local vm-manager is not running: {host.managerError}
        </p>
      )}
      {host.accelerator.warning && (
        <p className="banner warn" role="alert">
          Warning: {host.accelerator.warning}
        </p>
      )}
      {host.platformNote && (
        <p className="banner info" data-testid="vm-platform-note">
          {host.platformNote}
        </p>
      )}
      <dl className="facts">
        <dt>Accelerator</dt>
        <dd>
          <strong data-testid="vm-accel">{host.accelerator.chosen ?? 'none'}</strong> — {host.accelerator.reason}
        </dd>
        {host.accelerator.probes.length > 0 && (
          <>
            <dt>Probes</dt>
            <dd>
              <ul className="vm-plain">
                {host.accelerator.probes.map((p) => (
                  <li key={p.accel}>
                    {p.accel}: <span className={p.result === 'usable' ? 'ok' : 'warn'}>{p.result}</span>{' '}
                    <span className="muted small">({p.detail})</span>
                  </li>
                ))}
              </ul>
            </dd>
          </>
        )}
        <dt>Machine</dt>
        <dd>
          {host.cpus} CPUs, {mib(host.memoryBytes)}, kernel {host.kernel}
        </dd>
        <dt>Tools</dt>
        <dd>
          <ul className="vm-plain">
            {host.tools.map((t) => (
              <li key={t.name}>
                {t.name}:{' '}
                {t.found ? (
                  <span className="muted small">{t.version ?? 'found'}</span>
                ) : (
                  <span className="error">missing{t.error ? ` (${t.error})` : ''}</span>
                )}
              </li>
            ))}
          </ul>
        </dd>
        <dt>Firmware</dt>
        <dd>{host.ovmfCode ?? <span className="error">OVMF missing</span>}</dd>
        <dt>Manager</dt>
        <dd className="muted small">
          {host.mode} at {host.endpoint}
        </dd>
      </dl>
      {host.missing.length > 0 && (
        <div className="vm-missing">
          <h4>Missing</h4>
          <ul>
            {host.missing.map((m) => (
              <li key={m.what}>
                {m.what}: <code>{m.install}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
