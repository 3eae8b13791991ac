import type { SshStatus } from '../../../shared/contract/ssh';
import type { Hub } from '../hub';
import type { Logger } from '../log/logger';
import { BackendError, type TerminalBackend } from './backend';
import type { TermMirror } from './mirror';

export interface SessionOptions {
  autoReconnect: boolean;
  /** Delay before reconnect attempt n (1-based); default 1 s doubling to 30 s. */
  backoffMs?: (attempt: number) => number;
  maxAttempts?: number;
  /** Output is gathered this long before one event is published (a full MAX_EVENT goes at once). */
  batchMs?: number;
  /** Pause the backend while more than this many bytes are unacknowledged. */
  highWater?: number;
  /**
   * A window behind by more than highWater while output keeps coming is sent pictures of the
   * host's copy of the screen instead of every byte (docs/ssh.md, "Catch-up"); default on. Off,
   * the source pauses until the window catches up, as it always does while a picture goes out.
   */
  catchUp?: boolean;
  /** Hears once if the copy of the screen cannot take its plain-text path with this xterm (mirror.ts). */
  log?: Pick<Logger, 'warn'>;
}

export const DATA = 'ssh.data';
export const STATUS = 'ssh.status';
/**
 * Largest ssh.data event. Bigger events mean fewer WebSocket/IPC messages and ack round trips: into
 * Chromium's xterm here 256 KB events gave 11.5–16 MB/s against 9–10 MB/s for 64 KB (bench ssh-ui,
 * then with base64 in JSON; raw binary frames since, 19–24 MB/s); the price is peak RSS while
 * streaming (~47 MB against ~18 MB, bench ssh).
 */
export const MAX_EVENT = 256 * 1024;
/**
 * Unacknowledged bytes above which the source pauses. Everything the remote side has produced but
 * the window has not shown yet still scrolls past after Ctrl-C: this mark (+ one MAX_EVENT), the
 * session's batch (< one MAX_EVENT while flowing), and what ssh2 holds once paused: its small read
 * buffer (PAUSED_READ_BUFFER in ssh-backend.ts) plus the window it had granted (≤ 2 MB, what sshd
 * may still send). About 3.6 MB at most; before the read buffer was limited ssh2 also kept up to
 * 2 MB more, and a full CI run saw 4.27-4.78 MB scroll past (8.8 MB with a 4 MB mark). What the
 * mark buys in throughput is in docs/ssh.md ("Flow control").
 */
export const DEFAULT_HIGH_WATER = 1_000_000;
/** Output kept while nobody subscribes yet (e.g. between ssh.open and the tab subscribing). */
const HOLD_LIMIT = 512 * 1024;
/**
 * Catch-up (docs/ssh.md): one picture of the screen at a time, the next once the window has parsed
 * it (and all but PICTURE_SLACK of what it was sent before), PICTURE_MS after it at the soonest;
 * output quiet for QUIET_MS ends it with a picture of the screen and scrollback, after which every
 * byte goes to the window again.
 */
export const PICTURE_MS = 8;
const PICTURE_SLACK = 64 * 1024;
export const QUIET_MS = 60;
/**
 * The copy's parser may lag the source by this much before the source pauses (what the copy holds
 * still scrolls past after Ctrl-C, like the window's unacknowledged bytes outside catch-up).
 */
export const MIRROR_HIGH = 512 * 1024;
/**
 * While catching up, output the copy may take in past what the newest picture the window has
 * parsed shows before the source pauses until a newer one is parsed. What a window shows stays
 * this close to the output, and it is most of what still appears after Ctrl-C (bench ssh-ui: at
 * 1 MB 0.60 of `ssh -tt`, at 1.25 MB 0.68 and at most 3.1 MB after Ctrl-C in 12 trials, at 1.5 MB
 * 0.76 but 4.15 MB).
 */
export const PICTURE_AHEAD = 1280 * 1024;

export const defaultBackoff = (attempt: number) => Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));

/**
 * One terminal: owns a backend, batches its output into `ssh.data` events, pauses it while the
 * consumer lags (hub pressure above highWater) or nobody listens yet, publishes `ssh.status`, and
 * reconnects with backoff after a drop, re-sending the terminal size.
 */
export class TerminalSession {
  cols: number;
  rows: number;
  private status: SshStatus;
  private buf: Buffer[] = [];
  private bufBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly pauses = new Set<string>();
  private generation = 0;
  private live = false;
  private readonly observers = new Set<(chunk: Buffer) => void>();
  private readonly batchMs: number;
  private readonly highWater: number;
  published = 0;
  /** The host's copy of the screen (mirror.ts), loaded at start; catch-up and replay read it. */
  private mirror: TermMirror | null = null;
  /** stream: every byte goes to the window; catch-up: pictures do; sync: the closing picture is being taken. */
  private mode: 'stream' | 'catch-up' | 'sync' = 'stream';
  private lastData = 0;
  get catchingUp(): boolean {
    return this.mode !== 'stream';
  }
  private pictureTimer: NodeJS.Timeout | null = null;
  /** A picture sent that the window has not parsed yet, and when it was sent. */
  private pictureOut = false;
  private pictureSent = 0;
  /** Output fed to the copy since catch-up began, and how much of it the newest picture the window parsed shows. */
  private fed = 0;
  private shownAt = 0;
  /** Bytes of the closing picture still at the head of buf (not the copy's to parse again). */
  private pictureLeft = 0;
  /** Times a window was caught up with pictures, and queries the copy answered meanwhile (tests, bench). */
  catchUps = 0;
  answered = 0;
  /** Output bytes the copy never had to parse: plain text that scrolled out of its buffer unparsed (mirror.ts; tests, bench). */
  get unparsed(): number {
    return this.mirror?.skipped ?? 0;
  }
  /** Why there is no copy of the screen (its module did not load), or null. */
  mirrorMissing: string | null = null;

  constructor(
    readonly id: string,
    readonly backend: TerminalBackend,
    private readonly hub: Hub,
    private readonly opts: SessionOptions,
    size: { cols: number; rows: number },
    private readonly onFinal: (id: string) => void = () => {},
  ) {
    this.cols = size.cols;
    this.rows = size.rows;
    this.batchMs = opts.batchMs ?? 10;
    this.highWater = opts.highWater ?? DEFAULT_HIGH_WATER;
    this.status = {
      sessionId: id,
      state: 'connecting',
      closedBy: null,
      reason: null,
      attempt: 0,
      nextRetryMs: null,
      title: backend.title,
      interactive: backend.interactive,
    };
  }

  get state(): SshStatus {
    return { ...this.status };
  }

  /** Raw output tap (used by typeInto to watch the echo and the sha256sum line). */
  observe(fn: (chunk: Buffer) => void): () => void {
    this.observers.add(fn);
    return () => this.observers.delete(fn);
  }

  /** Opens the backend; a first-time failure closes the session (no automatic retry). */
  async start(): Promise<void> {
    // Loaded here, not at the host's start: xterm's parser is ~300 KB the first answer does not need.
    // Without it (a broken install) the terminal still works: no catch-up, and a reload shows nothing
    // of what was printed before.
    try {
      const { TermMirror } = await import('./mirror');
      const onAnswer = (answer: string) => {
        if (!this.live || !this.backend.interactive) return;
        this.answered++;
        this.backend.write(answer);
      };
      this.mirror = new TermMirror(this.cols, this.rows, onAnswer, this.opts.log ? { log: this.opts.log } : {});
    } catch (e) {
      this.mirrorMissing = (e as Error).message;
    }
    await this.connect(0);
  }

  private setStatus(patch: Partial<SshStatus>) {
    this.status = { ...this.status, ...patch };
    this.hub.publish(STATUS, this.id, this.state);
  }

  private async connect(attempt: number): Promise<boolean> {
    const gen = ++this.generation;
    this.live = false;
    this.pauses.clear();
    this.setStatus({ state: attempt ? 'reconnecting' : 'connecting', closedBy: null, reason: null, attempt, nextRetryMs: null });
    try {
      await this.backend.open(
        {
          data: (chunk) => gen === this.generation && this.onData(chunk),
          phase: (p) => gen === this.generation && this.setStatus({ state: attempt && p === 'connecting' ? 'reconnecting' : p }),
          ended: (how) => gen === this.generation && this.onEnded(how),
        },
        { cols: this.cols, rows: this.rows },
      );
    } catch (err) {
      if (gen !== this.generation) return false;
      const e = err instanceof BackendError ? err : new BackendError('failed', (err as Error).message, true);
      if (attempt > 0 && e.retryable && this.scheduleRetry(attempt + 1, e.message)) return false;
      this.finish(e.closedBy, e.message);
      return false;
    }
    if (gen !== this.generation) return false;
    this.live = true;
    // The size may have changed while we were away: tell the server again.
    this.backend.resize(this.cols, this.rows);
    this.setStatus({ state: 'open', attempt, reason: attempt ? `reconnected after ${attempt} attempt(s)` : null });
    return true;
  }

  private onEnded(how: { closedBy: 'dropped' | 'exited' | 'failed'; reason: string }) {
    this.live = false;
    this.flush();
    if (how.closedBy === 'dropped' && this.opts.autoReconnect && this.scheduleRetry(1, how.reason)) return;
    this.finish(how.closedBy, how.reason);
  }

  private scheduleRetry(attempt: number, reason: string): boolean {
    const max = this.opts.maxAttempts ?? 8;
    if (attempt > max) {
      this.finish('dropped', `${reason}; gave up after ${max} reconnect attempts — use Reconnect to try again`);
      return true;
    }
    const wait = (this.opts.backoffMs ?? defaultBackoff)(attempt);
    this.setStatus({ state: 'reconnecting', closedBy: 'dropped', reason, attempt, nextRetryMs: wait });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect(attempt);
    }, wait);
    return true;
  }

  private finish(closedBy: SshStatus['closedBy'], reason: string) {
    this.live = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.setStatus({ state: 'closed', closedBy, reason, nextRetryMs: null });
  }

  /** Reconnect now (the user's action), whatever the state. */
  async reconnect(): Promise<boolean> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.backend.close();
    return this.connect(Math.max(1, this.status.attempt + 1));
  }

  /** Skips the backoff wait of a session waiting to reconnect (e.g. the laptop just woke up). */
  retryNow(): void {
    if (!this.retryTimer || this.status.state !== 'reconnecting') return;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    void this.connect(Math.max(1, this.status.attempt));
  }

  close(): void {
    this.generation++;
    this.live = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.timer) clearTimeout(this.timer);
    if (this.pictureTimer) clearInterval(this.pictureTimer);
    this.retryTimer = this.timer = this.pictureTimer = null;
    this.backend.close();
    this.flush();
    this.mirror?.dispose();
    this.setStatus({ state: 'closed', closedBy: 'user', reason: 'closed by you', nextRetryMs: null });
    this.onFinal(this.id);
  }

  write(data: string | Buffer): boolean {
    if (!this.live) return false;
    this.backend.write(data);
    return true;
  }

  resize(cols: number, rows: number): void {
    this.cols = cols;
    this.rows = rows;
    this.mirror?.resize(cols, rows);
    if (this.live) this.backend.resize(cols, rows);
  }

  /**
   * Output this host holds that no window has been sent yet: the session's batch plus what the
   * backend read but has not delivered. After Ctrl-C it still scrolls past (see DEFAULT_HIGH_WATER).
   */
  held(): number {
    return this.bufBytes + (this.mode === 'catch-up' ? (this.mirror?.pending ?? 0) : 0) + (this.backend.held?.() ?? 0);
  }

  /**
   * What a newly attached window shows first (a reload, a second window): a picture of everything
   * published so far, screen and scrollback. The copy is fed in stream order, so once it has parsed
   * what it holds it is exactly what a window that saw every byte shows.
   */
  recent(): Promise<Buffer> {
    const mirror = this.mirror;
    if (!mirror) return Promise.resolve(Buffer.alloc(0));
    return new Promise((resolve) => mirror.whenParsed(() => resolve(mirror.picture(true))));
  }

  // ---- output path ----------------------------------------------------------------------
  private pause(why: string) {
    const was = this.pauses.size;
    this.pauses.add(why);
    if (was === 0) this.backend.pause();
  }
  private resume(why: string) {
    if (!this.pauses.delete(why)) return;
    if (this.pauses.size === 0 && this.live) this.backend.resume();
  }

  private onData(chunk: Buffer) {
    for (const fn of this.observers) fn(chunk);
    this.lastData = performance.now();
    if (this.mode === 'catch-up') {
      this.fed += chunk.length;
      if (this.fed - this.shownAt > PICTURE_AHEAD) this.pause('picture');
      return this.feed(chunk, true);
    }
    this.buf.push(chunk);
    this.bufBytes += chunk.length;
    if (this.bufBytes >= HOLD_LIMIT) this.pause('buffer');
    // A full event's worth goes out at once; small interactive output waits batchMs for company.
    if (this.bufBytes >= MAX_EVENT) this.flush();
    else if (!this.timer) this.timer = setTimeout(() => this.flush(), this.batchMs);
  }

  private flush() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.bufBytes === 0 || this.mode !== 'stream') return;
    if (this.hub.subscriberCount(DATA, this.id) === 0) {
      // Nobody is showing this terminal yet: hold a little, pause the source, look again soon.
      if (this.bufBytes >= HOLD_LIMIT) this.pause('buffer');
      if (this.status.state !== 'closed') this.timer = setTimeout(() => this.flush(), 50);
      return;
    }
    while (this.bufBytes > 0 && this.hub.pressure(DATA, this.id) <= this.highWater) {
      const all = this.buf.length === 1 ? this.buf[0]! : Buffer.concat(this.buf);
      const piece = all.subarray(0, MAX_EVENT);
      const rest = all.subarray(piece.length);
      this.buf = rest.length ? [rest] : [];
      this.bufBytes = rest.length;
      this.hub.publish(DATA, this.id, { data: piece, bytes: piece.length }, piece.length);
      this.published += piece.length;
      // the copy parses what the window is sent, in the same order; not its own picture again
      const own = Math.min(this.pictureLeft, piece.length);
      this.pictureLeft -= own;
      if (own < piece.length) this.feed(piece.subarray(own), false);
    }
    if (this.bufBytes < HOLD_LIMIT) this.resume('buffer');
    if (this.hub.pressure(DATA, this.id) > this.highWater) {
      // Behind by more than the mark with more waiting: pictures instead of every byte. Not while
      // the closing picture itself goes out (that would only start the next catch-up).
      if (this.bufBytes > 0 && this.pictureLeft === 0 && this.mirror && this.opts.catchUp !== false) return this.startCatchUp();
      if (!this.pauses.has('pressure')) {
        this.pause('pressure');
        // setImmediate, not inline: a hub whose low-water mark sits above our high-water mark
        // would otherwise spin in microtasks and starve the event loop.
        this.hub.onDrain(
          DATA,
          this.id,
          () =>
            setImmediate(() => {
              this.resume('pressure');
              this.flush();
            }),
          this.highWater,
        );
      }
    }
  }

  // ---- catch-up (docs/ssh.md) -----------------------------------------------------------
  /** Feeds the copy; the source pauses while its parser lags by more than MIRROR_HIGH. */
  private feed(chunk: Buffer, answer: boolean) {
    const mirror = this.mirror;
    if (!mirror) return;
    mirror.write(chunk, answer, () => mirror.pending <= MIRROR_HIGH / 2 && this.resume('mirror'));
    if (mirror.pending > MIRROR_HIGH) this.pause('mirror');
  }

  private startCatchUp() {
    this.mode = 'catch-up';
    this.catchUps++;
    this.pictureOut = false;
    this.fed = this.shownAt = 0;
    // What waits goes to the copy instead of the window: a picture will show it.
    for (const b of this.buf) this.feed(b, true);
    this.buf = [];
    this.bufBytes = 0;
    this.resume('buffer');
    this.pictureTimer = setInterval(() => this.catchUpTick(), PICTURE_MS);
  }

  private catchUpTick() {
    // quiet, and not because this session paused the source
    if (performance.now() - this.lastData >= QUIET_MS && !this.pauses.has('mirror') && !this.pauses.has('picture'))
      return this.endCatchUp();
    this.sendPicture();
  }

  /**
   * A picture of the screen, if the copy changed and the window has parsed the previous one: so
   * pictures come as fast as the window takes them (PICTURE_MS apart at the soonest) and each is
   * the newest. Once the window has parsed it, the source may run PICTURE_AHEAD past it again.
   */
  private sendPicture() {
    const mirror = this.mirror!;
    const pressure = this.hub.pressure(DATA, this.id);
    if (this.mode !== 'catch-up' || this.pictureOut || !mirror.changed || pressure > PICTURE_SLACK) return;
    if (performance.now() - this.pictureSent < PICTURE_MS) return;
    const pic = mirror.picture(false);
    this.hub.publish(DATA, this.id, { data: pic, bytes: pic.length }, pic.length);
    this.published += pic.length;
    this.pictureOut = true;
    this.pictureSent = performance.now();
    const shows = this.fed;
    const round = this.catchUps;
    this.hub.onDrain(
      DATA,
      this.id,
      () => {
        if (round !== this.catchUps) return; // a picture of an earlier catch-up
        this.pictureOut = false;
        this.shownAt = shows;
        if (this.fed - this.shownAt <= PICTURE_AHEAD) this.resume('picture');
        this.sendPicture();
      },
      pressure,
    );
  }

  /**
   * Output went quiet: once the copy has parsed all it was fed, its screen and scrollback go to the
   * window as one picture, then every byte that came meanwhile and after, as before the flood.
   */
  private endCatchUp() {
    if (this.pictureTimer) clearInterval(this.pictureTimer);
    this.pictureTimer = null;
    this.mode = 'sync';
    this.resume('picture');
    this.mirror!.whenParsed(() => {
      if (this.mode !== 'sync') return;
      const pic = this.mirror!.picture(true);
      this.buf.unshift(pic);
      this.bufBytes += pic.length;
      this.pictureLeft = pic.length;
      this.mode = 'stream';
      this.flush();
    });
  }
}
