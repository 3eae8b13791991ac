import { useEffect, useState } from 'react';
import { api, errorText } from '../../api';
import { useDraft } from '../use-draft';

const fields = (s: { gatewayImage: string; gatewayArgs: string[] }) => ({ image: s.gatewayImage, args: s.gatewayArgs.join('\n') });

/** The Jumpoint container image and its flags: not public, so the operator supplies them (all POVs). */
export function GatewaySettings() {
  const { draft, edit, seed } = useDraft({ image: '', args: '' });
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => {
    api
      .call('pam.getSettings', {})
      .then((s) => seed(fields(s)))
      .catch((e) => setMsg({ ok: false, text: errorText(e) }));
  }, [seed]);
  const save = async () => {
    try {
      const s = await api.call('pam.saveSettings', {
        gatewayImage: draft.image.trim(),
        gatewayArgs: draft.args
          .split('\n')
          .map((a) => a.trim())
          .filter(Boolean),
      });
      seed(fields(s), { saved: true });
      setMsg({ ok: true, text: 'Saved.' });
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    }
  };
  return (
    <form className="panel" aria-label="Jumpoint container" onSubmit={(e) => (e.preventDefault(), void save())}>
      <h3>Jumpoint container (every POV)</h3>
      <label className="small">
        Image
        <input
          value={draft.image}
          onChange={(e) => edit('image', e.target.value)}
          aria-label="Jumpoint image"
          placeholder="registry/beyondtrust/jumpoint:tag"
        />
      </label>
      <label className="small">
        docker run flags, one per line
        <textarea value={draft.args} onChange={(e) => edit('args', e.target.value)} aria-label="Jumpoint flags" rows={3} />
      </label>
      <p>
        <button type="submit">Save</button> {msg && <span className={msg.ok ? 'ok small' : 'error small'}>{msg.text}</span>}
      </p>
    </form>
  );
}
