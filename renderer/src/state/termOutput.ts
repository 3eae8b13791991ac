/**
 * The terminal output path (docs/ssh.md, "Flow control"): bytes as they arrive from the transport,
 * written into xterm in pieces of at most MAX_WRITE with at most IN_FLIGHT writes queued in xterm.
 * Pieces that arrive while xterm is busy wait here and go in as one joined write; a large arrival
 * (a fetch body can hand over 2 MB at once when the page was busy) is cut, so xterm yields to
 * rendering and input between pieces and parsed bytes are acknowledged sooner, which lets the host
 * send more sooner. Acks come from xterm's write callbacks, so the host's unacknowledged count is
 * still at least what xterm has not parsed.
 */
export const MAX_WRITE = 256 * 1024;
export const IN_FLIGHT = 2;
/**
 * Parsed bytes are acknowledged in batches of this size, or at once when xterm has nothing left:
 * an ack per fetch chunk (~64 KB) was a WebSocket message, a JSON parse and a schema check each on
 * both sides, for nothing the 4 MB window needs.
 */
export const ACK_EVERY = 512 * 1024;

export interface TermSink {
  write(data: Uint8Array, parsed: () => void): void;
}

export function termOutput(sink: TermSink, ack: (bytes: number) => void): (chunk: Uint8Array) => void {
  const waiting: Uint8Array[] = [];
  let waitingBytes = 0;
  let inFlight = 0;
  let parsed = 0;

  const next = (): Uint8Array => {
    const first = waiting[0]!;
    if (first.length >= MAX_WRITE || waiting.length === 1) {
      const piece = first.length > MAX_WRITE ? first.subarray(0, MAX_WRITE) : first;
      if (piece === first) waiting.shift();
      else waiting[0] = first.subarray(MAX_WRITE);
      return piece;
    }
    const out = new Uint8Array(Math.min(waitingBytes, MAX_WRITE));
    let at = 0;
    while (at < out.length) {
      const c = waiting[0]!;
      const n = Math.min(c.length, out.length - at);
      out.set(n === c.length ? c : c.subarray(0, n), at);
      at += n;
      if (n === c.length) waiting.shift();
      else waiting[0] = c.subarray(n);
    }
    return out;
  };

  const pump = () => {
    while (inFlight < IN_FLIGHT && waitingBytes > 0) {
      const piece = next();
      waitingBytes -= piece.length;
      inFlight++;
      sink.write(piece, () => {
        inFlight--;
        parsed += piece.length;
        pump();
        if (parsed >= ACK_EVERY || (inFlight === 0 && waitingBytes === 0)) {
          ack(parsed);
          parsed = 0;
        }
      });
    }
  };

  return (chunk) => {
    if (chunk.length === 0) return;
    waiting.push(chunk);
    waitingBytes += chunk.length;
    pump();
  };
}
