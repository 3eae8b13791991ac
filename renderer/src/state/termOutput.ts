/**
 * The terminal output path (docs/ssh.md, "Flow control"): bytes as they arrive from the transport,
 * written into xterm in pieces of at most MAX_WRITE with at most IN_FLIGHT writes queued in xterm.
 * Pieces that arrive while xterm is busy wait here and go in as one joined write; a large arrival
 * (a fetch body can hand over 2 MB at once when the page was busy) is cut, so xterm yields to
 * rendering and input between pieces and each piece is acknowledged as soon as it is parsed, which
 * lets the host send more sooner. Each write is acknowledged from its own callback, so the host's
 * unacknowledged count is still what xterm has not parsed.
 */
export const MAX_WRITE = 256 * 1024;
export const IN_FLIGHT = 2;

export interface TermSink {
  write(data: Uint8Array, parsed: () => void): void;
}

export function termOutput(sink: TermSink, ack: (bytes: number) => void): (chunk: Uint8Array) => void {
  const waiting: Uint8Array[] = [];
  let waitingBytes = 0;
  let inFlight = 0;

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
        ack(piece.length);
        pump();
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
