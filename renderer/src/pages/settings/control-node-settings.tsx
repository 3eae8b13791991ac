import { useEffect, useState, type FormEvent } from 'react';
import type { z } from 'zod';
import type { controlNodeSettingsView } from '../../../../shared/contract/control-node';
import { api, errorText } from '../../api';
import { useDraft } from '../../components/use-draft';
import { reveal, sectionFromHash } from '../../nav';

type View = z.infer<typeof controlNodeSettingsView>;

/**
 * Settings → Control node: where control nodes get their enrolment codes and what they run. The
 * token is write-only (it goes to the keychain; the panel only ever says "token set"). SPIRE's
 * trust domain and bundle left blank mean the control plane's own; the server address defaults to
 * port 8081, which is written out on save so the field says what is used.
 */
export default function ControlNodeSettings() {
  const [view, setView] = useState<View | null>(null);
  const { draft, edit, seed } = useDraft({ url: '', image: '', spire: false as boolean, domain: '', address: '', bundle: '' });
  const { url, image, spire, domain, address, bundle } = draft;
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);

  /** The core's settings into the panel: the fields nobody has edited, or all of them after a save. */
  const show = (v: View, saved = false) => {
    setView(v);
    seed(
      {
        url: v.controlPlaneUrl,
        image: v.agentImage,
        spire: v.spireEnabled,
        domain: v.spireTrustDomain,
        address: v.spireAddress,
        bundle: v.spireTrustBundle,
      },
      { saved },
    );
  };

  // opened by a readiness Fix link (`#/settings/control-node`): show this panel
  useEffect(() => {
    if (sectionFromHash('settings') === 'control-node') reveal('control-node');
  }, []);
  useEffect(() => {
    api.call('controlNode.getSettings', {}).then(
      (v) => show(v),
      (e) => setStatus({ kind: 'error', text: errorText(e) }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps -- once, on mount: show calls only stable setters
  }, []);

  async function save(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    try {
      const v = await api.call('controlNode.saveSettings', {
        controlPlaneUrl: url.trim(),
        agentImage: image.trim(),
        spireEnabled: spire,
        spireTrustDomain: domain.trim(),
        spireAddress: address.trim(),
        spireTrustBundle: bundle.trim(),
        ...(token ? { token } : {}),
      });
      setToken('');
      show(v, true);
      setStatus({ kind: 'ok', text: 'Saved. The next Install control node uses these settings.' });
    } catch (err) {
      setStatus({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="panel" id="control-node" aria-label="Control node">
      <h3>Control node</h3>
      <p className="muted">
        Each POV's control node runs the agent, which dials out to the control plane. POV Desk mints its single-use enrolment code there
        (and, with SPIRE, a one-use join token).
      </p>
      <form onSubmit={(e) => void save(e)} className="form" aria-label="Control node settings">
        <label>
          Control-plane URL
          <input value={url} onChange={(e) => edit('url', e.target.value)} placeholder="https://control-plane.example.com" />
        </label>
        <label>
          Control-plane token
          <input
            type="password"
            value={token}
            onChange={(e) => setToken(e.target.value)}
            placeholder={view?.tokenSet ? 'token set — leave empty to keep it' : 'paste the control-plane API token'}
            autoComplete="off"
          />
        </label>
        <label>
          Agent image
          <input value={image} onChange={(e) => edit('image', e.target.value)} placeholder="registry.example.com/povdesk/agent:1.4.2" />
        </label>
        <label className="row">
          <input type="checkbox" checked={spire} onChange={(e) => edit('spire', e.target.checked)} />
          Let agents attest through SPIRE
        </label>
        <label>
          SPIRE trust domain
          <input
            value={domain}
            onChange={(e) => edit('domain', e.target.value)}
            placeholder="blank: the control plane's own, e.g. example.org"
            disabled={!spire}
          />
        </label>
        <label>
          SPIRE server address for agents
          <input
            value={address}
            onChange={(e) => edit('address', e.target.value)}
            placeholder="host:port (default port 8081)"
            disabled={!spire}
          />
        </label>
        <label>
          SPIRE trust bundle (PEM)
          <textarea
            value={bundle}
            onChange={(e) => edit('bundle', e.target.value)}
            rows={4}
            placeholder="blank: the control plane's own; else -----BEGIN CERTIFICATE----- …"
            disabled={!spire}
            spellCheck={false}
          />
        </label>
        <div className="row">
          <button type="submit" className="primary" disabled={busy || !view}>
            Save
          </button>
          <span data-testid="control-plane-token-status" className={view?.tokenSet ? 'ok' : 'muted'}>
            {view ? (view.tokenSet ? 'token set' : 'token not set') : ''}
          </span>
        </div>
        {status && (
          <p className={status.kind === 'ok' ? 'ok' : 'error'} role={status.kind === 'error' ? 'alert' : 'status'}>
            {status.text}
          </p>
        )}
      </form>
    </div>
  );
}
