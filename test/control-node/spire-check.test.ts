import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSpireServer } from '../../main/services/control-node/spire-check';
import { needs } from '../support/system';
import { makeCa } from './fixtures';

const missing = needs(['openssl']);

/** A CA and leaf certificates made with the openssl CLI. */
function pki(dir: string) {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ca = (name: string) => makeCa(dir, name);
  const leaf = (name: string, caName: string, san: string) => {
    ssl(
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      '/O=SPIRE',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${caName}.pem`,
      '-CAkey',
      `${caName}.key`,
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    );
    return { key: readFileSync(join(dir, `${name}.key`), 'utf8'), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') };
  };
  return { ca, leaf };
}

describe.skipIf(missing)('SPIRE server check over real TLS on loopback', () => {
  let dir: string;
  let bundle: string;
  const servers: NetServer[] = [];
  const ports: Record<string, number> = {};

  const conns = new Set<import('node:net').Socket>();
  async function listen(name: string, server: NetServer) {
    servers.push(server);
    server.on('connection', (c) => {
      conns.add(c);
      c.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    ports[name] = (server.address() as { port: number }).port;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-spire-'));
    const { ca, leaf } = pki(dir);
    bundle = ca('ours');
    ca('theirs');
    const good = leaf('good', 'ours', 'URI:spiffe://povdesk.test/spire/server');
    const otherDashboard = leaf('other', 'theirs', 'URI:spiffe://povdesk.test/spire/server');
    const wrongId = leaf('wrongid', 'ours', 'URI:spiffe://elsewhere.test/spire/server');
    await listen(
      'good',
      createTlsServer({ ...good, ALPNProtocols: ['h2'] }, (s) => s.end()),
    );
    await listen(
      'other',
      createTlsServer(otherDashboard, (s) => s.end()),
    );
    await listen(
      'wrongid',
      createTlsServer(wrongId, (s) => s.end()),
    );
    await listen(
      'http',
      createNetServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n')),
    );
    // A port that was listening and is now closed: nothing answers.
    const closed = createNetServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    ports.closed = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
  });
  afterAll(async () => {
    for (const c of conns) c.destroy();
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  const check = (name: string) =>
    checkSpireServer({ address: `127.0.0.1:${ports[name]}`, trustDomain: 'povdesk.test', trustBundle: bundle, timeoutMs: 3000 });

  it('offers SPIRE when the certificate chains to our bundle and names spiffe://<td>/spire/server', async () => {
    const r = await check('good');
    expect(r).toMatchObject({ offered: true, answered: true });
  });

  it("refuses another dashboard's SPIRE server (right SPIFFE ID, wrong trust bundle), naming the address", async () => {
    const r = await check('other');
    expect(r.offered).toBe(false);
    if (!r.offered) {
      expect(r.address).toBe(`127.0.0.1:${ports.other}`);
      expect(r.message).toMatch(/does not chain to this dashboard's SPIRE trust bundle/);
      expect(r.message).toContain('SPIRE server address for agents');
    }
  });

  it('refuses a certificate from our CA naming a different SPIFFE ID', async () => {
    const r = await check('wrongid');
    expect(r.offered).toBe(false);
    if (!r.offered) expect(r.message).toContain('spiffe://elsewhere.test/spire/server, not spiffe://povdesk.test/spire/server');
  });

  it('refuses something that is not TLS at all', async () => {
    const r = await check('http');
    expect(r.offered).toBe(false);
    if (!r.offered) expect(r.message).toMatch(/did not complete TLS/);
  });

  it('offers SPIRE when nothing answers (that proves nothing about the guest network)', async () => {
    const r = await check('closed');
    expect(r).toMatchObject({ offered: true, answered: false });
  });

  it('uses port 8081 when the address has no port', async () => {
    const r = await checkSpireServer({ address: '127.0.0.1', trustDomain: 'povdesk.test', trustBundle: bundle, timeoutMs: 1000 });
    expect(r.message).toContain('127.0.0.1:8081');
  });
});
