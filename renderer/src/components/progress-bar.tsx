/** A determinate bar when the fraction is known, an indeterminate one when it is null. */
export function ProgressBar({ fraction, label }: { fraction: number | null; label: string }) {
  return (
    <div
      className={`progress ${fraction === null ? 'indeterminate' : ''}`}
      role="progressbar"
      aria-label={label || 'progress'}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={fraction === null ? undefined : Math.round(fraction * 100)}
    >
      <div style={{ width: fraction === null ? '30%' : `${Math.round(fraction * 100)}%` }} />
    </div>
  );
}
