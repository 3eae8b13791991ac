import { open as openFile, stat, watch, type FileHandle } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { AppError } from '../../../shared/contract/errors';
import { BackendError, type TerminalBackend, type TerminalSink } from './backend';

/**
 * A local VM's serial console log, followed like `tail -f` (read-only). Starts `fromBytes` before
 * the end so the tab shows recent lines. A truncated file (VM restarted) is read from the start.
 */
export class FileTailBackend implements TerminalBackend {
  readonly interactive = false;
  private fh: FileHandle | null = null;
  private pos = 0;
  private paused = false;
  private reading = false;
  private stopped = true;
  private poll: NodeJS.Timeout | null = null;
  private watcher: AbortController | null = null;

  constructor(
    private readonly path: string,
    readonly title: string,
    private readonly fromBytes = 64 * 1024,
    private readonly pollMs = 250,
  ) {}

  async open(sink: TerminalSink): Promise<void> {
    this.close();
    sink.phase('connecting');
    try {
      this.fh = await openFile(this.path, 'r');
    } catch (e) {
      throw new BackendError('failed', `cannot open the console log ${this.path}: ${(e as Error).message}; is the VM running?`, true);
    }
    const size = (await this.fh.stat()).size;
    this.pos = Math.max(0, size - this.fromBytes);
    this.stopped = false;
    const kick = () => void this.pump(sink);
    this.poll = setInterval(kick, this.pollMs);
    this.watcher = new AbortController();
    (async () => {
      try {
        for await (const _ of watch(this.path, { signal: this.watcher!.signal })) kick();
      } catch {
        /* aborted, or watching unsupported: the poll still runs */
      }
    })();
    kick();
  }

  private async pump(sink: TerminalSink) {
    if (this.reading || this.paused || this.stopped || !this.fh) return;
    this.reading = true;
    try {
      const st = await stat(this.path).catch(() => null);
      if (!st) {
        this.stopped = true;
        this.clear();
        sink.ended({ closedBy: 'dropped', reason: `the console log ${this.path} is gone (VM removed?)` });
        return;
      }
      if (st.size < this.pos) this.pos = 0;
      const buf = Buffer.alloc(64 * 1024);
      while (!this.paused && !this.stopped && this.fh) {
        const { bytesRead } = await this.fh.read(buf, 0, buf.length, this.pos);
        if (bytesRead === 0) break;
        this.pos += bytesRead;
        sink.data(Buffer.from(buf.subarray(0, bytesRead)));
      }
    } finally {
      this.reading = false;
    }
  }

  write(): void {
    throw new AppError('unsupported', 'this console is a read-only log tail; open the interactive serial console to type');
  }
  resize(): void {}
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  private clear() {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    this.watcher?.abort();
    this.watcher = null;
    const fh = this.fh;
    this.fh = null;
    void fh?.close().catch(() => {});
  }
  close(): void {
    this.stopped = true;
    this.clear();
  }
}

/** An interactive serial console through a unix socket (QEMU `-serial unix:<path>,server,nowait`). */
export class UnixSocketBackend implements TerminalBackend {
  readonly interactive = true;
  private sock: Socket | null = null;
  private closing = false;

  constructor(
    private readonly path: string,
    readonly title: string,
  ) {}

  open(sink: TerminalSink): Promise<void> {
    this.close();
    this.closing = false;
    sink.phase('connecting');
    return new Promise((resolve, reject) => {
      const s = connect(this.path);
      let up = false;
      s.once('connect', () => {
        up = true;
        this.sock = s;
        resolve();
      });
      s.on('data', (d: Buffer) => sink.data(d));
      s.on('error', (e: Error) => {
        if (!up)
          reject(new BackendError('failed', `cannot connect to the serial socket ${this.path}: ${e.message}; is the VM running?`, true));
      });
      s.on('close', () => {
        if (up && !this.closing && this.sock === s) {
          this.sock = null;
          sink.ended({ closedBy: 'dropped', reason: 'the serial socket closed (VM stopped or restarted)' });
        }
      });
    });
  }

  write(data: string | Buffer): void {
    this.sock?.write(data);
  }
  /** A serial line has no size; the guest keeps its own (`stty rows/cols` if needed). */
  resize(): void {}
  pause(): void {
    this.sock?.pause();
  }
  resume(): void {
    this.sock?.resume();
  }
  close(): void {
    this.closing = true;
    this.sock?.destroy();
    this.sock = null;
  }
}
