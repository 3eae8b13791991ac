import { connect } from 'node:net';

/** The first line a TCP server on 127.0.0.1:port sends (10 s at most). */
export function firstLine(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(port, '127.0.0.1');
    let text = '';
    const t = setTimeout(
      () => (c.destroy(), reject(new Error(`no line from 127.0.0.1:${port} in 10 s (got ${JSON.stringify(text)})`))),
      10_000,
    );
    c.on('data', (d: Buffer) => {
      text += d.toString();
      if (!text.includes('\n')) return;
      clearTimeout(t);
      c.destroy();
      resolve(text.split(/\r?\n/)[0]!);
    });
    c.on('error', (e) => (clearTimeout(t), reject(e)));
  });
}
