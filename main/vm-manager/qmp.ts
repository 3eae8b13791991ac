/** A small QMP client: connect to QEMU's unix socket, negotiate, run one command at a time. */
import { connect, type Socket } from 'node:net';
import { sleep } from '../lib/sleep';

export class Qmp {
  private buf = '';
  private waiters: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  private closed = false;
  /** Called for each asynchronous event QEMU sends ({event, data, timestamp}). */
  onEvent: ((e: { event: string; data?: unknown }) => void) | null = null;

  private constructor(private sock: Socket) {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      this.buf += d;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i).trim();
        this.buf = this.buf.slice(i + 1);
        if (!line) continue;
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if ('event' in msg) {
          this.onEvent?.(msg as { event: string; data?: unknown });
          continue;
        }
        if ('QMP' in msg) continue;
        const w = this.waiters.shift();
        if (!w) continue;
        if ('error' in msg) w.reject(new Error(`qmp: ${JSON.stringify(msg.error)}`));
        else w.resolve(msg.return);
      }
    });
    const fail = () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w.reject(new Error('qmp: connection closed'));
    };
    sock.on('close', fail);
    sock.on('error', fail);
  }

  static async open(path: string, timeoutMs = 5000): Promise<Qmp> {
    const sock = await new Promise<Socket>((resolve, reject) => {
      const s = connect(path);
      const t = setTimeout(() => {
        s.destroy();
        reject(new Error(`qmp: no answer on ${path} within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(t);
        resolve(s);
      });
      s.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
    const q = new Qmp(sock);
    await q.run('qmp_capabilities', undefined, timeoutMs);
    return q;
  }

  run(command: string, args?: Record<string, unknown>, timeoutMs = 5000): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('qmp: connection closed'));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`qmp: ${command} got no answer within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        resolve: (v) => {
          clearTimeout(t);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
      this.sock.write(JSON.stringify(args ? { execute: command, arguments: args } : { execute: command }) + '\n');
    });
  }

  close(): void {
    this.closed = true;
    this.sock.destroy();
  }
}

/** Retries Qmp.open until the socket answers or the deadline passes. */
export async function openQmpWhenReady(path: string, deadlineMs: number, alive: () => boolean = () => true): Promise<Qmp> {
  const end = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < end && alive()) {
    try {
      return await Qmp.open(path, Math.max(500, Math.min(3000, end - Date.now())));
    } catch (e) {
      last = e;
      await sleep(100);
    }
  }
  throw new Error(`qmp socket ${path} did not answer: ${last instanceof Error ? last.message : String(last ?? 'process exited')}`);
}
