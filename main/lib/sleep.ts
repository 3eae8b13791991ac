/**
 * Waits `ms` milliseconds. With a signal, an abort ends the wait at once by rejecting with the
 * signal's reason (an Error 'aborted' when it has none); an already-aborted signal rejects at once.
 * Callers that want a cancelled wait to simply end write `sleep(ms, signal).catch(() => undefined)`.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A signal that aborts after `ms` milliseconds or when `signal` aborts, whichever comes first;
 * `clear()` stops the timer once the work is done. Not `AbortSignal.any([s, AbortSignal.timeout(ms)])`:
 * Node's timeout timer holds its signal weakly and a composite holds its sources weakly, so once
 * nothing else references them a garbage collection drops the timeout and the composite never
 * aborts (nodejs/node#57736; `jobs_wait {timeoutSeconds: 1}` answered after 30 s that way). Here
 * the timer's closure and the source's listener hold the controller.
 */
export function deadline(ms: number, signal?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(signal?.reason);
  const timer = setTimeout(() => ctl.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError')), ms);
  const clear = () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  };
  ctl.signal.addEventListener('abort', clear, { once: true });
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return { signal: ctl.signal, clear };
}
