import { useEffect, useState } from 'react';
import { api, errorText } from '../../api';

/** The Jumpoint container image and its flags: not public, so the operator supplies them (all POVs). */
export function GatewaySettings() {
  const [image, setImage] = useState('');
  const [args, setArgs] = useState('');
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => {
    api
      .call('pam.getSettings', {})
      .then((s) => {
        setImage(s.gatewayImage);
        setArgs(s.gatewayArgs.join('\n'));
      })
      .catch((e) => setMsg({ ok: false, text: errorText(e) }));
  }, []);
  const save = async () => {
    try {
      await api.call('pam.saveSettings', { gatewayImage: image.trim(), gatewayArgs: args.split('\n').map((a) => a.trim()).filter(Boolean) });
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
        <input value={image} onChange={(e) => setImage(e.target.value)} aria-label="Jumpoint image" placeholder="registry/beyondtrust/jumpoint:tag" />
      </label>
      <label className="small">
        docker run flags, one per line
        <textarea value={args} onChange={(e) => setArgs(e.target.value)} aria-label="Jumpoint flags" rows={3} />
      </label>
      <p>
        <button type="submit">Save</button> {msg && <span className={msg.ok ? 'ok small' : 'error small'}>{msg.text}</span>}
      </p>
    </form>
  );
}
