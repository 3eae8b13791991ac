import { useState } from 'react';
import {
  chooseTermRenderer,
  probeGl,
  setTermRendererPref,
  termRendererPref,
  TERM_RENDERER_PREFS,
  type TermRendererPref,
} from '../../state/term-renderer';

const LABELS: Record<TermRendererPref, string> = {
  auto: 'Automatic: WebGL on a GPU, the page (DOM) otherwise',
  webgl: 'WebGL always',
  dom: 'The page (DOM) always',
};

/**
 * Settings → Terminals: what draws the terminals in this window. Automatic is right unless the GPU
 * draws badly (glitches after a driver update): then "The page (DOM) always".
 */
export default function TerminalSettings() {
  const [pref, setPref] = useState<TermRendererPref>(termRendererPref);
  const now = chooseTermRenderer(pref, probeGl());
  return (
    <div className="panel">
      <h3>Terminals</h3>
      <label>
        Drawing
        <select
          value={pref}
          onChange={(e) => {
            const next = e.target.value as TermRendererPref;
            setTermRendererPref(next);
            setPref(next);
          }}
        >
          {TERM_RENDERER_PREFS.map((p) => (
            <option key={p} value={p}>
              {LABELS[p]}
            </option>
          ))}
        </select>
      </label>
      <p className="muted" data-testid="term-renderer-now">
        In this window: {now.kind === 'webgl' ? 'WebGL' : 'the page (DOM)'} ({now.why}). A change applies to open terminals at once.
      </p>
    </div>
  );
}
