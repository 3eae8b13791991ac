/**
 * What a terminal tab is backed by: an SSH shell, a local VM's serial socket, a console log tail.
 * The TerminalSession around it does batching, flow control, status and reconnects; a backend
 * only moves bytes. The local vm-manager integration plugs its serial console in through this.
 */
export interface TerminalSink {
  /** Output bytes, in order. */
  data(chunk: Buffer): void;
  /** Progress while opening (shown in the tab). */
  phase(phase: 'connecting' | 'verifying' | 'authenticating'): void;
  /** Called at most once per successful open, when the connection ends on its own. */
  ended(how: { closedBy: 'dropped' | 'exited' | 'failed'; reason: string }): void;
}

export interface TerminalBackend {
  readonly title: string;
  /** False for read-only consoles (a log tail): input is refused. */
  readonly interactive: boolean;
  /** Connects; resolves once bytes can flow. Rejects with a BackendError. */
  open(sink: TerminalSink, size: { cols: number; rows: number }): Promise<void>;
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  /** Stop reading (the transport's own flow control then holds the sender). */
  pause(): void;
  resume(): void;
  /** Bytes read from the transport but not yet handed to the sink (held while paused). */
  held?(): number;
  /** Tear down now; no ended() call follows. */
  close(): void;
}

/**
 * Why an open failed. `refused`: the user (or a changed host key) said no. `failed`: it will fail
 * the same way again (bad credentials). `retryable`: the network or the server was not there.
 */
export class BackendError extends Error {
  constructor(
    readonly closedBy: 'refused' | 'failed',
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'BackendError';
  }
}
