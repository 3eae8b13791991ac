import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/transport';
import { hostFixture } from '../foundation/helpers';

/** Status of a GET (or a WebSocket upgrade) to the host sent with the given Host header. */
function statusWithHost(port: number, host: string | null, opts: { path?: string; upgrade?: string[] } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (opts.upgrade) {
      Object.assign(headers, {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Protocol': opts.upgrade.join(', '),
      });
    }
    const req = request({ host: '127.0.0.1', port, path: opts.path ?? '/', headers, setHost: false });
    if (host !== null) req.setHeader('Host', host);
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

// Item 11 (browser-mode host) of the security review: DNS rebinding. A page on evil.test whose
// name later resolves to 127.0.0.1 is same-origin with itself, so its requests carry
// Host: evil.test:<port>; only the bound address and port are answered.
describe('the browser-mode host answers only its own Host', () => {
  const f = hostFixture();

  it('serves the page and opens the socket for Host 127.0.0.1:<port>', async () => {
    expect(await statusWithHost(f.host.port, `127.0.0.1:${f.host.port}`, { path: '/no-such-file.js' })).toBe(404);
    expect(
      await statusWithHost(f.host.port, `127.0.0.1:${f.host.port}`, {
        path: WS_PATH,
        upgrade: [WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token],
      }),
    ).toBe(101);
  });

  it('refuses any other Host with 403, on pages, byte streams and the socket', async () => {
    for (const host of [
      'evil.test',
      `evil.test:${f.host.port}`,
      `127.0.0.1:${f.host.port + 1}`,
      `127.0.0.1.evil.test:${f.host.port}`,
      '',
    ]) {
      expect(await statusWithHost(f.host.port, host), host).toBe(403);
      expect(await statusWithHost(f.host.port, host, { path: '/bytes?stream=x' }), host).toBe(403);
      expect(await statusWithHost(f.host.port, host, { path: WS_PATH, upgrade: [WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token] }), host).toBe(
        403,
      );
    }
    // No Host at all: Node's HTTP server refuses it (400) before the host sees it.
    expect(await statusWithHost(f.host.port, null)).toBe(400);
  });
});
