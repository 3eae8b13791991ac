import type { LabPlatformId, PlatformChoice } from '../../state/lab';

/** Where the POV's VMs run: one radio per platform the app can reach now. */
export function PlatformPicker({
  choices,
  value,
  onChange,
}: {
  choices: PlatformChoice[];
  value: LabPlatformId;
  onChange(p: LabPlatformId): void;
}) {
  return (
    <fieldset className="platform-picker">
      <legend>Lab platform</legend>
      {choices.map((c) => (
        <label key={c.platform} className="platform-choice">
          <input type="radio" name="lab-platform" value={c.platform} checked={value === c.platform} onChange={() => onChange(c.platform)} />
          <span>
            <strong>{c.label}</strong>
            <span className="small muted"> — {c.detail}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}
