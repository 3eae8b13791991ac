import { useCallback, useEffect, useState } from 'react';
import type { VmExecResult, VmForward, VmRecord } from '../../../../shared/contract/vm';
import { LIVE_VM_STATES } from '../../../../shared/vm-states';
import { api, errorText, type ApiError } from '../../api';

interface Run {
  command: string;
  result: VmExecResult | null;
  error: string | null;
}

/** An error, with the way out when it is a login the cluster no longer accepts. */
function errorLine(e: unknown): string {
  const text = errorText(e);
  return (e as ApiError).code === 'unauthorized' ? `${text} (open Connection above and log in again)` : text;
}

/**
 * The VM panel's tools: run a command as root in the guest (the output stays in the panel, a
 * non-zero exit shown as such), and forward a guest TCP port to this machine's 127.0.0.1 (listed,
 * removable; a remote manager's forward is on its own host, so that needs the local manager).
 */
export function VmTools({ vm, remote }: { vm: Pick<VmRecord, 'id' | 'name' | 'state'>; remote: boolean }) {
  const live = LIVE_VM_STATES.includes(vm.state);
  const [command, setCommand] = useState('');
  const [runs, setRuns] = useState<Run[]>([]);
  const [running, setRunning] = useState(false);
  const [port, setPort] = useState('');
  const [forwards, setForwards] = useState<VmForward[]>([]);
  const [fwdError, setFwdError] = useState<string | null>(null);

  const loadForwards = useCallback(() => {
    api
      .call('vm.forwards', { id: vm.id })
      .then((r) => setForwards(r.forwards))
      .catch((e) => setFwdError(errorLine(e)));
  }, [vm.id]);
  useEffect(() => loadForwards(), [loadForwards]);

  const run = async () => {
    const line = command.trim();
    if (!line) return;
    setRunning(true);
    try {
      const result = await api.call('vm.exec', { id: vm.id, command: ['sh', '-c', line] });
      setRuns((r) => [{ command: line, result, error: null }, ...r].slice(0, 20));
    } catch (e) {
      setRuns((r) => [{ command: line, result: null, error: errorLine(e) }, ...r].slice(0, 20));
    } finally {
      setRunning(false);
    }
  };

  const portNumber = Number(port);
  const portOk = /^\d+$/.test(port) && portNumber >= 1 && portNumber <= 65535;
  const forward = async () => {
    setFwdError(null);
    try {
      await api.call('vm.forward', { id: vm.id, port: portNumber });
      setPort('');
      loadForwards();
    } catch (e) {
      setFwdError(errorLine(e));
    }
  };
  const remove = async (f: VmForward) => {
    setFwdError(null);
    try {
      await api.call('vm.unforward', { forwardId: f.id });
    } catch (e) {
      setFwdError(errorLine(e));
    }
    loadForwards();
  };

  return (
    <div className="vm-tools">
      <form
        className="row"
        aria-label="Run a command"
        onSubmit={(e) => {
          e.preventDefault();
          void run();
        }}
      >
        <label>
          Command (as root, in {vm.name})
          <input value={command} onChange={(e) => setCommand(e.target.value)} placeholder="uname -a" disabled={!live} spellCheck={false} />
        </label>
        <button type="submit" disabled={!live || running || !command.trim()}>
          {running ? 'Running…' : 'Run'}
        </button>
      </form>
      {!live && <p className="muted small">The VM is {vm.state}: start it to run commands or forward ports.</p>}
      <ul className="vm-exec-runs" aria-label="Command output">
        {runs.map((r, i) => (
          <li key={runs.length - i} data-testid="vm-exec-run">
            <div className="row">
              <code>$ {r.command}</code>
              {r.result && <span className={r.result.exitCode === 0 ? 'ok small' : 'error small'}>exit {r.result.exitCode}</span>}
            </div>
            {r.result?.stdout && <pre className="vm-exec-out">{r.result.stdout}</pre>}
            {r.result?.stderr && <pre className="vm-exec-err error">{r.result.stderr}</pre>}
            {r.error && (
              <p className="error small" role="alert">
                {r.error}
              </p>
            )}
          </li>
        ))}
      </ul>

      <h4>Ports forwarded to this machine</h4>
      {remote ? (
        <p className="muted small">
          A remote vm-manager forwards a guest port to its own host's loopback; forwarding to this machine needs the local vm-manager.
        </p>
      ) : (
        <form
          className="row"
          aria-label="Forward a port"
          onSubmit={(e) => {
            e.preventDefault();
            if (portOk) void forward();
          }}
        >
          <label>
            Guest port
            <input value={port} onChange={(e) => setPort(e.target.value.trim())} placeholder="8080" inputMode="numeric" disabled={!live} />
          </label>
          <button type="submit" disabled={!live || !portOk}>
            Forward
          </button>
          {port && !portOk && <span className="error small">a port from 1 to 65535</span>}
        </form>
      )}
      {fwdError && (
        <p className="error small" role="alert">
          {fwdError}
        </p>
      )}
      {forwards.length === 0 ? (
        !remote && <p className="muted small">No ports forwarded.</p>
      ) : (
        <ul className="vm-forwards" aria-label="Forwarded ports">
          {forwards.map((f) => (
            <li key={f.id} className="row" data-testid="vm-forward">
              <code>{f.localAddress}</code>
              <span className="muted small">→ guest port {f.guestPort}</span>
              <button onClick={() => void remove(f)} aria-label={`Remove forward of port ${f.guestPort}`}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
