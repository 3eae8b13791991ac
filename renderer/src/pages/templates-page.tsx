import { useCallback, useEffect, useState } from 'react';
import type { RunnerScriptView } from '../../../shared/contract/control-node';
import type { BakedImage } from '../../../shared/contract/bake';
import { api, errorText } from '../api';
import { BakedList, BakePanel } from '../components/templates/bake-panel';
import { LocalTemplatesPanel } from '../components/templates/local-templates';
import './templates.css';

/**
 * Saves text as a file through a temporary object URL (works in Electron and browser mode).
 * octet-stream, not text/plain: Chromium appends ".txt" to a text/plain download with no extension.
 */
function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function baseName(path: string) {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * The template runner for baking into a control-node template. Laid out for typing into a VM
 * console with no clipboard: large monospace, line numbers, a short checksum per line, and the
 * whole script's sha256 with the one command that verifies what was typed.
 */
export default function TemplatesPage() {
  const [runner, setRunner] = useState<RunnerScriptView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const [baked, setBaked] = useState<BakedImage[]>([]);
  const [bakedError, setBakedError] = useState<string | null>(null);
  const loadBaked = useCallback(() => {
    api
      .call('bake.list', {})
      .then((r) => {
        setBaked(r.images);
        setBakedError(null);
      })
      .catch((e) => setBakedError(`Could not list baked templates: ${errorText(e)}`));
  }, []);
  useEffect(loadBaked, [loadBaked]);

  useEffect(() => {
    api
      .call('bake.runnerScript', {})
      .then(setRunner)
      .catch((e) => setError(errorText(e)));
  }, []);

  const copy = async (what: string, text: string) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(`${what} copied`);
    } catch {
      setCopied(`This window has no clipboard access; use Download ${what.toLowerCase()} instead`);
    }
  };

  return (
    <section className="page templates-page">
      <header className="page-head">
        <h2>Templates</h2>
      </header>
      {error && (
        <p className="error" role="alert">
          Could not load the template runner: {error}
        </p>
      )}
      <BakePanel onBaked={loadBaked} />
      <BakedList images={baked} error={bakedError} />
      <LocalTemplatesPanel />
      {!runner && !error && <p className="muted">Loading the template runner…</p>}
      {runner && (
        <>
          <div className="panel">
            <h3>Template runner</h3>
            <p>
              Skytap hands the control-node bootstrap to the VM as <code>user_data</code>, and nothing on the guest runs it. Bake this
              runner into the control-node template: it polls the metadata service every 20 seconds, runs a payload only when both markers
              are present, and runs each payload once.
            </p>
            <ol className="templates-steps">
              <li>
                As root, type the script below into <code>{runner.path}</code>, then <code>chmod 0755 {runner.path}</code>.
              </li>
              <li>
                Check it: <code data-testid="sha256-command">{runner.checks.whole}</code> must print
                <code className="templates-sha" data-testid="runner-sha256">
                  {runner.sha256}
                </code>
              </li>
              <li>
                If it does not, this prints each line's number and checksum to compare with the column on the right:
                <pre className="templates-cmd" data-testid="perline-command">
                  {runner.checks.perLine}
                </pre>
              </li>
              <li>
                Type the unit into <code>{runner.unitPath}</code>, then <code>systemctl enable --now {baseName(runner.unitPath)}</code>.
              </li>
            </ol>
            <div className="templates-actions">
              <button className="primary" onClick={() => download(baseName(runner.path), runner.script)}>
                Download script
              </button>
              <button onClick={() => void copy('Script', runner.script)}>Copy script</button>
              <button onClick={() => download(baseName(runner.unitPath), runner.unit)}>Download unit</button>
              <button onClick={() => void copy('Unit', runner.unit)}>Copy unit</button>
              {copied && (
                <span className="muted" role="status">
                  {copied}
                </span>
              )}
            </div>
          </div>

          <div className="panel">
            <h3>
              {runner.path} <span className="muted">({runner.lines.length} lines, plain ASCII)</span>
            </h3>
            <table className="templates-lines" data-testid="runner-lines" aria-label="Template runner script, one row per line">
              <colgroup>
                <col className="templates-col-n" />
                <col />
                <col className="templates-col-sum" />
              </colgroup>
              <thead>
                <tr>
                  <th scope="col">Line</th>
                  <th scope="col">Text</th>
                  <th scope="col">Sum</th>
                </tr>
              </thead>
              <tbody>
                {runner.lines.map((l) => (
                  <tr key={l.n}>
                    <td className="templates-n">{l.n}</td>
                    <td className="templates-text">
                      <pre>{l.text === '' ? ' ' : l.text}</pre>
                    </td>
                    <td className="templates-sum">{l.sum}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {/* The exact bytes, for tools and tests: the table above is for reading. */}
            <textarea
              className="templates-raw"
              data-testid="runner-script"
              readOnly
              value={runner.script}
              aria-label="Template runner script text"
            />
          </div>

          <div className="panel">
            <h3>{runner.unitPath}</h3>
            <pre className="templates-unit" data-testid="runner-unit">
              {runner.unit}
            </pre>
          </div>
        </>
      )}
    </section>
  );
}
