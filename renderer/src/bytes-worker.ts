/**
 * Reads byte streams (terminal output, browser mode) off the page's main thread: the fetch body is
 * drained as soon as bytes arrive, even while the page is busy in xterm's parser, and each chunk is
 * handed to the page as a transferred ArrayBuffer (no copy). See transport.ts and docs/ssh.md.
 *
 * In:  {t: 'open', k, url, token, header} | {t: 'close', k}
 * Out: {t: 'data', k, buf} | {t: 'end', k, error?}
 */
type In = { t: 'open'; k: string; url: string; header: string; token: string } | { t: 'close'; k: string };

const ctx = self as unknown as {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<In>) => void) | null;
};
const readers = new Map<string, AbortController>();

async function read(msg: Extract<In, { t: 'open' }>, ctl: AbortController) {
  let error: string | undefined;
  try {
    const res = await fetch(msg.url, { headers: { [msg.header]: msg.token }, signal: ctl.signal, cache: 'no-store' });
    if (!res.ok || !res.body) throw new Error(`byte stream refused (${res.status})`);
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const buf = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value.buffer : value.slice().buffer;
      ctx.postMessage({ t: 'data', k: msg.k, buf }, [buf as ArrayBuffer]);
    }
  } catch (e) {
    error = (e as Error).message;
  }
  if (readers.get(msg.k) === ctl) readers.delete(msg.k);
  if (!ctl.signal.aborted) ctx.postMessage({ t: 'end', k: msg.k, error });
}

ctx.onmessage = (ev) => {
  const msg = ev.data;
  readers.get(msg.k)?.abort();
  readers.delete(msg.k);
  if (msg.t !== 'open') return;
  const ctl = new AbortController();
  readers.set(msg.k, ctl);
  void read(msg, ctl);
};
