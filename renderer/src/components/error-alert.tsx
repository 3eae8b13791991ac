/** An error message that screen readers announce; nothing when there is no error. */
export function ErrorAlert({ error }: { error: string | null | undefined }) {
  return error ? (
    <p className="error" role="alert">
      {error}
    </p>
  ) : null;
}
