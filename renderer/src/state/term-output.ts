/**
 * The terminal output path (docs/ssh.md, "Flow control"): each chunk goes into xterm as it arrives
 * (xterm's own write queue already parses several per time slice), and parsed bytes are
 * acknowledged from xterm's write callbacks in batches of ACK_EVERY, or at once when xterm has
 * nothing left to parse. So the host's unacknowledged count is still at least what xterm has not
 * parsed, and a keystroke's echo is acknowledged as soon as it is shown.
 *
 * Measured and dropped (docs/ssh.md): holding chunks back to keep two writes in xterm, joining what
 * waited and cutting large arrivals to 256 KB cost more renderer CPU per MB than it saved.
 */
export const ACK_EVERY = 256 * 1024;

export interface TermSink {
  write(data: Uint8Array, parsed: () => void): void;
}

export function termOutput(sink: TermSink, ack: (bytes: number) => void): (chunk: Uint8Array) => void {
  let inXterm = 0;
  let parsed = 0;
  return (chunk) => {
    if (chunk.length === 0) return;
    inXterm++;
    sink.write(chunk, () => {
      inXterm--;
      parsed += chunk.length;
      // an ack per fetch chunk (~64 KB) was a WebSocket message, a JSON parse and a schema check
      // each, on both sides; a quarter of the host's 1 MB mark (DEFAULT_HIGH_WATER) keeps the
      // source going without them
      if (parsed >= ACK_EVERY || inXterm === 0) {
        ack(parsed);
        parsed = 0;
      }
    });
  };
}
