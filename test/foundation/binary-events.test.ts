import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/transport';
import { binaryField, decodeBinaryEvent, encodeBinaryEvent } from '../../shared/contract/wire';
import type { Core } from '../../main/core/create';
import { startHost, type Host } from '../../main/host/server';
import { tempHome, testCore } from './helpers';

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
  let core: Core;
  let host: Host;
  beforeAll(async () => {
    core = await testCore();
    host = await startHost({ core, staticDir: tempHome() });
  });
  afterAll(async () => {
    await host.close();
    await core.close();
  });

  it('ssh.data arrives binary and byte-exact; ssh.status arrives as JSON text', async () => {
    const ws = new WebSocket(host.url.replace('http', 'ws') + 'ws', [WS_PROTOCOL, WS_TOKEN_PREFIX + host.token]);
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const got: { binary: boolean; raw: Buffer }[] = [];
    ws.on('message', (raw: Buffer, isBinary: boolean) => got.push({ binary: isBinary, raw }));
    ws.send(JSON.stringify({ t: 'sub', stream: 'ssh.data', key: 's-1' }));
    ws.send(JSON.stringify({ t: 'sub', stream: 'ssh.status', key: 's-1' }));
    await expect.poll(() => core.base.hub.subscriberCount('ssh.status', 's-1')).toBe(1);
    const bytes = Buffer.from(every());
    core.base.hub.publish('ssh.data', 's-1', { data: bytes, bytes: bytes.length }, bytes.length);
    core.base.hub.publish('ssh.status', 's-1', { sessionId: 's-1', state: 'open' });
    await expect.poll(() => got.length).toBe(2);
    expect(got[0]!.binary).toBe(true);
    const ev = decodeBinaryEvent(arrayBuffer(got[0]!.raw));
    expect(ev).toMatchObject({ stream: 'ssh.data', key: 's-1', bytes: bytes.length });
    expect(Buffer.from(ev.data.data as Uint8Array).equals(bytes)).toBe(true);
    expect(got[1]!.binary).toBe(false);
    expect(JSON.parse(String(got[1]!.raw))).toMatchObject({ t: 'event', stream: 'ssh.status', data: { state: 'open' } });
    // Flow control still counts the bytes until the client acknowledges them.
    expect(core.base.hub.pressure('ssh.data', 's-1')).toBe(bytes.length);
    ws.send(JSON.stringify({ t: 'ack', stream: 'ssh.data', key: 's-1', bytes: bytes.length }));
    await expect.poll(() => core.base.hub.pressure('ssh.data', 's-1')).toBe(0);
    ws.close();
  });
});
