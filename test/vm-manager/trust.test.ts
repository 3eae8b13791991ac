/**
 * Issue 10 ("Trust that holds"), checked from real guests under TCG with as few boots as possible:
 * `image build-test` makes the test image's reference measurements (no boot); a VM then shows that
 * a software-made AK is refused while the real guest verifies, that the guest is fenced off the
 * host's loopback, that metadata connections, nonces and the console are bounded, that the API
 * checks the Host header, and that a reboot from inside the guest re-gates its user-data.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedPcr11 } from '../../main/vm-manager/attest/policy';
import { runVmManagerCli } from '../../main/vm-manager/cli';
import { TestClient as VmManagerClient } from './support';
import { readPolicy, TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { METADATA_PROXY, type VmRecord } from '../../main/vm-manager/vms';
import { firstLine } from '../support/net';
import { forgeQuote } from './attest/forge';
import { pidsWith, stateWithImage, until, vmSkip } from './support';

const skip = vmSkip();
const CONSOLE_CAP = 256 * 1024;

/** Speaks HTTP/1.0 to the metadata socket as VM `id` would (through the proxy's preamble). */
function askAs(sock: string, id: string, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const c = connect(sock);
    let out = '';
    c.on('connect', () => {
      const head = body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
      c.write(`POVDESK-VM ${id}\n${method} ${path} HTTP/1.0\r\nHost: 169.254.169.254\r\n${head}\r\n${body ?? ''}`);
    });
    c.on('data', (d) => (out += String(d)));
    c.on('end', () => resolve({ status: Number(out.split(' ')[1]), text: out.slice(out.indexOf('\r\n\r\n') + 4) }));
    c.on('error', reject);
  });
}

/** The guest's serial shell (after READY): run a command, get what it printed. */
class SerialShell {
  private buf = '';
  private n = 0;
  private constructor(private sock: Socket) {
    sock.on('data', (d: Buffer) => (this.buf += d.toString('latin1')));
  }
  static open(path: string): Promise<SerialShell> {
    return new Promise((resolve, reject) => {
      const s = connect(path);
      s.once('connect', () => resolve(new SerialShell(s)));
      s.once('error', reject);
    });
  }
  async run(cmd: string, ms = 60_000): Promise<string> {
    const mark = `MARK${++this.n}X`;
    const from = this.buf.length;
    // The marker is printed split so the echoed command line never matches it.
    this.sock.write(`${cmd}; echo "${mark.slice(0, 3)}""${mark.slice(3)}"\n`);
    await until(
      `serial output of: ${cmd}`,
      () => this.buf.indexOf(`${mark}\r\n`, from) >= 0 || this.buf.indexOf(`${mark}\n`, from) >= 0,
      ms,
      100,
    );
    return this.buf.slice(from, this.buf.indexOf(mark, from));
  }
  write(text: string) {
    this.sock.write(text);
  }
  close() {
    this.sock.destroy();
  }
}

/** The host key an SSH server on 127.0.0.1:port presents (the handshake stops there). */
function presentedHostKey(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    let key = '';
    c.on('error', () => (key ? resolve(key) : reject(new Error(`no host key from 127.0.0.1:${port}`))));
    c.connect({
      host: '127.0.0.1',
      port,
      username: 'nobody',
      readyTimeout: 20_000,
      hostVerifier: (k: Buffer) => {
        key = k.toString('base64');
        return false;
      },
    });
  });
}

function hostHeaderStatus(url: string, host: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      { host: u.hostname, port: u.port, path: '/api/v1/host', headers: { Host: host, Authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(skip !== null)('trust that holds: real guests (QEMU/TCG, OVMF, swtpm)', () => {
  let state: string;
  let m: RunningManager | null = null;
  let client: VmManagerClient;
  let hostSecret: Server;
  let secretPort = 0;

  beforeAll(async () => {
    state = stateWithImage('vmm-trust-');
    hostSecret = createServer((s) => s.end('HOST-LOOPBACK-SECRET\n'));
    await new Promise<void>((r) => hostSecret.listen(0, '127.0.0.1', r));
    secretPort = (hostSecret.address() as { port: number }).port;
  });
  afterAll(async () => {
    await m?.close({ stopVms: true });
    for (const id of m?.vms.list().map((v) => v.id) ?? []) await m?.vms.delete(id).catch(() => {});
    hostSecret?.close();
    expect(pidsWith(state)).toEqual([]);
    rmSync(state, { recursive: true, force: true });
  });

  it("image build-test makes the test image's reference measurements from its files and this firmware (no boot)", async () => {
    const out: string[] = [];
    const t = Date.now();
    const code = await runVmManagerCli(
      ['image', 'build-test', '--state-dir', state],
      (s) => out.push(s),
      (s) => out.push(s),
    );
    expect(code, out.join('\n')).toBe(0);
    const policy = readPolicy(join(state, 'images', TEST_IMAGE))!;
    expect(policy.references?.firmware.code.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(policy.references?.boot.kind).toBe('kernel');
    expect(policy.golden.sha256).toEqual({});
    expect(JSON.parse(out.find((l) => l.startsWith('{'))!)).toMatchObject({ golden: null, references: { boot: { kind: 'kernel' } } });
    expect(pidsWith(state)).toEqual([]); // no learn boot ran
    console.log(`[figure] image build-test with references: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    // made again from the same files: the same measurements, a new date
    const again: string[] = [];
    expect(
      await runVmManagerCli(
        ['image', 'references', TEST_IMAGE, '--state-dir', state],
        (s) => again.push(s),
        (s) => again.push(s),
      ),
    ).toBe(0);
    const { made_at: _a, ...before } = policy.references!;
    const { made_at: _b, ...after } = readPolicy(join(state, 'images', TEST_IMAGE))!.references!;
    expect(after).toEqual(before);
    expect(JSON.parse(again.find((l) => l.startsWith('{'))!)).toMatchObject({
      image: TEST_IMAGE,
      unpredictable: null,
      references: { boot: { kind: 'kernel' } },
    });
  }, 120_000);

  it('an attested VM right after build-test: forged AK refused, real guest verified, fenced, bounded, re-gated on reset', async () => {
    m = await serve({ stateDir: state, token: 'tok', consoleMaxBytes: CONSOLE_CAP });
    client = new VmManagerClient(m.url, 'tok');
    const md = join(state, 'metadata.sock');
    const created = await client.create({ name: 'trust', user_data: 'trust-user-data', require_attestation: true, wait_for: 'none' });
    const id = created.id;
    // Item 1: the AK is the manager's, pinned before the guest ran a single instruction.
    expect.soft(created.povdesk.attestation.akFingerprint).toMatch(/^[0-9a-f]{64}$/);

    // Item 1: a software key with TPM attribute bits is refused, whatever PCR values it claims.
    const nonce = (await askAs(md, id, 'GET', '/attest/nonce')).text.trim();
    expect.soft(nonce).toMatch(/^[0-9a-f]{64}$/);
    const forgedPcrs: Record<number, string> = { 11: expectedPcr11('initrd') };
    for (const p of [0, 1, 2, 3, 4, 5, 6, 7, 9]) forgedPcrs[p] = '00'.repeat(32);
    const forged = forgeQuote('initrd', nonce, forgedPcrs);
    const answer = await askAs(md, id, 'POST', '/attest/quote', JSON.stringify(forged.body));
    expect.soft(answer.text).toMatch(/AK is not this VM's TPM key/);
    expect.soft(answer.status).toBe(403);
    const ud = await askAs(md, id, 'GET', '/skytap/vms/self/user_data');
    expect.soft(ud.status).toBe(503);
    expect.soft(ud.text).not.toContain('trust-user-data');

    // Item 14 + item 1: the real guest verifies against the references build-test made, with no learn mode.
    const vm = await m.vms.waitFor(id, 'ready', 240_000);
    expect.soft(vm.attestation.initrd).toMatchObject({ verified: true, mismatches: [], learned: {} });
    expect.soft(vm.attestation.ready?.verified).toBe(true);
    expect.soft(vm.attestation.akFingerprint).toBe(created.povdesk.attestation.akFingerprint);

    // Item 11: the API answers only to its own Host.
    const port = new URL(m.url).port;
    expect.soft(await hostHeaderStatus(m.url, `127.0.0.1:${port}`, 'tok')).toBe(200);
    expect.soft(await hostHeaderStatus(m.url, `evil.test:${port}`, 'tok')).toBe(403);
    expect.soft(await hostHeaderStatus(m.url, `localhost:${port}`, 'tok')).toBe(403);

    // Item 2: the SSH forward still reaches the guest; the guest does not reach the host's loopback.
    expect.soft(await firstLine(vm.ports.ssh!)).toMatch(/^SSH-2\.0-dropbear/);
    // Item 12: the guest's SSH host key is the one the manager made (released after attestation).
    expect(vm.sshHostKey?.publicKey).toMatch(/^ssh-ed25519 /);
    expect.soft(await presentedHostKey(vm.ports.ssh!)).toBe(vm.sshHostKey!.publicKey.split(' ')[1]);
    const sh = await SerialShell.open(vm.paths.serialSocket!);
    try {
      sh.write('\n');
      const reach = await sh.run(`nc -w 3 169.254.169.2 ${secretPort} </dev/null; echo "nc-exit=$?"`);
      expect.soft(reach).toMatch(/nc-exit=/);
      expect.soft(reach).not.toContain('HOST-LOOPBACK-SECRET');
      const meta = await sh.run(`printf 'GET /skytap/vms/self/user_data HTTP/1.0\\r\\n\\r\\n' | nc -w 5 169.254.169.254 80 | head -n 1`);
      expect.soft(meta).toMatch(/HTTP\/1\.1 200/);

      // Item 7: concurrent metadata connections are capped (no process per connection beyond it).
      await sh.run('i=0; while [ $i -lt 12 ]; do (sleep 25 | nc 169.254.169.254 80 >/dev/null 2>&1 &); i=$((i+1)); done; sleep 4');
      const proxies = pidsWith(METADATA_PROXY).filter((p) => {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return argv[1] === METADATA_PROXY && argv.includes(id); // Node processes only (not the gate's sh/flock)
      });
      console.log(`[finding] metadata proxies for 12 held guest connections: ${proxies.length}`);
      expect.soft(proxies.length).toBeLessThanOrEqual(4);
      await sh.run('sleep 24');

      // Item 7: nonce requests are rate limited.
      const codes = await sh.run(
        `i=0; while [ $i -lt 16 ]; do printf 'GET /attest/nonce HTTP/1.0\\r\\n\\r\\n' | nc -w 5 169.254.169.254 80 | head -n 1 | ` +
          `cut -d ' ' -f 2; i=$((i+1)); done`,
        120_000,
      );
      const statuses = codes
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => /^\d{3}$/.test(l));
      console.log(`[finding] 16 nonce requests answered: ${statuses.join(' ')}`);
      expect.soft(statuses.length).toBe(16);
      expect.soft(statuses).toContain('429');

      // Item 7: the console log stays under its cap while the guest floods the serial line.
      await sh.run('yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef | head -c 1200000', 180_000);
      await until('the console cap to apply', () => statSync(vm.paths.console).size <= CONSOLE_CAP || null, 15_000, 250);
      const tail = (await client.console(id, 5)).console;
      expect.soft(tail).toMatch(/0123456789abcdef/);

      // Item 13: a reboot from inside the guest withholds user-data again until a new initrd quote verifies.
      const firstInitrdAt = vm.attestation.initrd!.at;
      const seen: VmRecord[] = [];
      m.vms.events.on('change', (r: VmRecord) => r.id === id && seen.push(structuredClone(r)));
      sh.write('reboot -f\n');
      await until('the reset to re-gate user-data', () => seen.find((r) => !r.attestation.userDataReleased), 20_000, 100);
      const again = await m.vms.waitFor(id, 'ready', 240_000);
      expect.soft(again.attestation.initrd?.verified).toBe(true);
      expect.soft(again.attestation.initrd?.at).not.toBe(firstInitrdAt);
      // Item 12: the same host key after the reboot (it churned every boot before).
      expect.soft(await presentedHostKey(again.ports.ssh!)).toBe(vm.sshHostKey!.publicKey.split(' ')[1]);
    } finally {
      sh.close();
    }
    await client.delete(id);
    expect.soft(pidsWith(join(state, 'vms', id))).toEqual([]);
  }, 600_000);
});
