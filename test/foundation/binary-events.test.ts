import { get, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BYTES_PATH, BYTES_TOKEN_HEADER, WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/transport';
import { binaryField, decodeBinaryEvent, encodeBinaryEvent } from '../../shared/contract/wire';
import type { Host } from '../../main/host/server';
import { hostFixture } from './helpers';

const every = () => Uint8Array.from({ length: 256 * 40 }, (_, i) => i % 256);
const arrayBuffer = (u: Uint8Array) => u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;

describe('binary stream frames', () => {
  it('round-trip every byte value, the other fields and the ack count', () => {
    const frame = encodeBinaryEvent('ssh.data', 's-1', { data: every(), note: 'x' }, 10240, 'data');
    const back = decodeBinaryEvent(arrayBuffer(frame));
    expect(back.stream).toBe('ssh.data');
    expect(back.key).toBe('s-1');
    expect(back.bytes).toBe(10240);
    expect(back.data.note).toBe('x');
    expect(Buffer.from(back.data.data as Uint8Array).equals(Buffer.from(every()))).toBe(true);
  });

  it('refuse a frame whose header overruns it, or whose header is not an event', () => {
    const frame = encodeBinaryEvent('ssh.data', 'k', { data: new Uint8Array(3) }, 3, 'data');
    new DataView(frame.buffer).setUint32(0, frame.length);
    expect(() => decodeBinaryEvent(arrayBuffer(frame))).toThrow(/header says/);
    const head = new TextEncoder().encode(JSON.stringify({ t: 'result', id: 1 }));
    const odd = new Uint8Array(4 + head.length);
    new DataView(odd.buffer).setUint32(0, head.length);
    odd.set(head, 4);
    expect(() => decodeBinaryEvent(arrayBuffer(odd))).toThrow(/not an event/);
    expect(() => decodeBinaryEvent(new ArrayBuffer(2))).toThrow(/shorter/);
  });

  it('only an object with exactly one byte field is binary', () => {
    expect(binaryField({ data: new Uint8Array(1), bytes: 1 })).toBe('data');
    expect(binaryField({ data: 'aGk=', bytes: 2 })).toBeNull();
    expect(binaryField({ a: new Uint8Array(1), b: new Uint8Array(1) })).toBeNull();
    expect(binaryField(new Uint8Array(1))).toBeNull();
    expect(binaryField(null)).toBeNull();
  });
});

describe('the browser-mode host sends byte events as binary frames and the rest as JSON', () => {
  const f = hostFixture();

  it('ssh.data arrives binary and byte-exact; ssh.status arrives as JSON text', async () => {
    const ws = new WebSocket(f.host.url.replace('http', 'ws') + 'ws', [WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token]);
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const got: { binary: boolean; raw: Buffer }[] = [];
    ws.on('message', (raw: Buffer, isBinary: boolean) => !String(raw).includes('"hello"') && got.push({ binary: isBinary, raw }));
    ws.send(JSON.stringify({ t: 'sub', stream: 'ssh.data', key: 's-1' }));
    ws.send(JSON.stringify({ t: 'sub', stream: 'ssh.status', key: 's-1' }));
    await expect.poll(() => f.core.base.hub.subscriberCount('ssh.status', 's-1')).toBe(1);
    const bytes = Buffer.from(every());
    f.core.base.hub.publish('ssh.data', 's-1', { data: bytes, bytes: bytes.length }, bytes.length);
    f.core.base.hub.publish('ssh.status', 's-1', { sessionId: 's-1', state: 'open' });
    await expect.poll(() => got.length).toBe(2);
    expect(got[0]!.binary).toBe(true);
    const ev = decodeBinaryEvent(arrayBuffer(got[0]!.raw));
    expect(ev).toMatchObject({ stream: 'ssh.data', key: 's-1', bytes: bytes.length });
    expect(Buffer.from(ev.data.data as Uint8Array).equals(bytes)).toBe(true);
    expect(got[1]!.binary).toBe(false);
    expect(JSON.parse(String(got[1]!.raw))).toMatchObject({ t: 'event', stream: 'ssh.status', data: { state: 'open' } });
    // Flow control still counts the bytes until the client acknowledges them.
    expect(f.core.base.hub.pressure('ssh.data', 's-1')).toBe(bytes.length);
    ws.send(JSON.stringify({ t: 'ack', stream: 'ssh.data', key: 's-1', bytes: bytes.length }));
    await expect.poll(() => f.core.base.hub.pressure('ssh.data', 's-1')).toBe(0);
    ws.close();
  });
});

/** Opens a WebSocket to the host and waits for its hello. */
async function openConn(host: Host): Promise<{ ws: WebSocket; conn: string }> {
  const ws = new WebSocket(host.url.replace('http', 'ws') + 'ws', [WS_PROTOCOL, WS_TOKEN_PREFIX + host.token]);
  const first = await new Promise<string>((r, j) => (ws.once('message', (m) => r(String(m))), ws.once('error', j)));
  const hello = JSON.parse(first) as { t: string; conn: string };
  expect(hello.t).toBe('hello');
  return { ws, conn: hello.conn };
}

function getBytes(
  host: Host,
  query: Record<string, string>,
  headers: Record<string, string> = { [BYTES_TOKEN_HEADER]: host.token },
): Promise<IncomingMessage> {
  const url = `${host.url.replace(/\/$/, '')}${BYTES_PATH}?${new URLSearchParams(query)}`;
  return new Promise((resolve, reject) => get(url, { headers }, resolve).once('error', reject));
}

const bodyOf = (res: IncomingMessage) =>
  new Promise<string>((r) => {
    let text = '';
    res.on('data', (d: Buffer) => (text += d));
    res.on('end', () => r(text));
  });

describe('byte streams over an HTTP body, tied to a WebSocket connection', () => {
  const f = hostFixture();

  it(
    'refuses a request without the token, from another site or origin, for another stream or an unknown connection, subscribing ' +
      'nothing',
    async () => {
      const { ws, conn } = await openConn(f.host);
      const q = { stream: 'ssh.data', key: 's-2', conn };
      const token = { [BYTES_TOKEN_HEADER]: f.host.token };
      const cases: [Record<string, string>, Record<string, string>, number, RegExp][] = [
        [q, {}, 401, /token/],
        [q, { [BYTES_TOKEN_HEADER]: 'guess' }, 401, /token/],
        [q, { ...token, 'Sec-Fetch-Site': 'cross-site' }, 403, /origin/],
        [q, { ...token, Origin: 'http://evil.example' }, 403, /origin/],
        [{ ...q, stream: 'ssh.status' }, token, 400, /not a byte stream/],
        [{ ...q, conn: 'nope' }, token, 404, /WebSocket/],
        [{ ...q, key: '' }, token, 400, /key/],
      ];
      for (const [query, headers, status, why] of cases) {
        const res = await getBytes(f.host, query, headers);
        expect(res.statusCode, JSON.stringify(headers)).toBe(status);
        expect(await bodyOf(res)).toMatch(why);
      }
      expect(f.core.base.hub.subscriberCount('ssh.data', 's-2')).toBe(0);
      ws.close();
    },
  );

  it(
    'delivers published bytes exactly; WebSocket acks release the pressure; a second reader replaces the first; closing the ' +
      'WebSocket ends it',
    async () => {
      const { ws, conn } = await openConn(f.host);
      const first = await getBytes(f.host, { stream: 'ssh.data', key: 's-3', conn });
      expect(first.statusCode).toBe(200);
      expect(first.headers['content-type']).toBe('application/octet-stream');
      const chunks: Buffer[] = [];
      first.on('data', (d: Buffer) => chunks.push(d));
      const firstEnded = new Promise((r) => first.once('end', r));
      await expect.poll(() => f.core.base.hub.subscriberCount('ssh.data', 's-3')).toBe(1);
      const bytes = Buffer.from(every());
      f.core.base.hub.publish('ssh.data', 's-3', { data: bytes, bytes: bytes.length }, bytes.length);
      f.core.base.hub.publish('ssh.data', 's-3', { data: bytes.subarray(0, 7), bytes: 7 }, 7);
      await expect.poll(() => Buffer.concat(chunks).length).toBe(bytes.length + 7);
      expect(Buffer.concat(chunks).equals(Buffer.concat([bytes, bytes.subarray(0, 7)]))).toBe(true);
      expect(f.core.base.hub.pressure('ssh.data', 's-3')).toBe(bytes.length + 7);
      ws.send(JSON.stringify({ t: 'ack', stream: 'ssh.data', key: 's-3', bytes: bytes.length }));
      await expect.poll(() => f.core.base.hub.pressure('ssh.data', 's-3')).toBe(7);

      const second = await getBytes(f.host, { stream: 'ssh.data', key: 's-3', conn });
      expect(second.statusCode).toBe(200);
      await firstEnded;
      await expect.poll(() => f.core.base.hub.subscriberCount('ssh.data', 's-3')).toBe(1);
      second.resume();
      const secondEnded = new Promise((r) => second.once('end', r));
      ws.close();
      await secondEnded;
      await expect.poll(() => f.core.base.hub.subscriberCount('ssh.data', 's-3')).toBe(0);
    },
  );
});
