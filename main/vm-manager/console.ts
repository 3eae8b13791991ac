/** Tail of a console log read from the END of the file: cost depends on the lines asked, not the file size. */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export function tailLines(file: string, lines: number, maxBytes = 4 * 1024 * 1024): string[] {
  if (lines <= 0) return [];
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  try {
    const size = fstatSync(fd).size;
    const chunk = 64 * 1024;
    let pos = size;
    let buf = Buffer.alloc(0);
    let newlines = 0;
    while (pos > 0 && newlines <= lines && size - pos < maxBytes) {
      const len = Math.min(chunk, pos);
      pos -= len;
      const part = Buffer.alloc(len);
      readSync(fd, part, 0, len, pos);
      for (let i = 0; i < len; i++) if (part[i] === 10) newlines++;
      buf = Buffer.concat([part, buf]);
    }
    let text = buf.toString('utf8');
    if (pos > 0) text = text.slice(text.indexOf('\n') + 1); // drop the partial first line
    const all = text.split('\n');
    if (all[all.length - 1] === '') all.pop();
    return all.slice(-lines).map((l) => l.replace(/\r$/, '').replace(/\x1b\[[0-9;=?]*[A-Za-z]/g, ''));
  } finally {
    closeSync(fd);
  }
}
