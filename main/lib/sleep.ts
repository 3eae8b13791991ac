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
