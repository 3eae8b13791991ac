/** Pieces the vm-api suites share: a throwaway CA-signed certificate for 127.0.0.1 (openssl). */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { needs } from '../support/system';
import { tempDir } from '../support/temp-dirs';

export function opensslSkip(): string | null {
  return needs(['openssl']);
}

/** A CA and a server certificate for IP 127.0.0.1 signed by it; caFile holds the CA only. */
export function makeTls(): { key: string; cert: string; ca: string; caFile: string; dir: string } {
  const dir = tempDir('povdesk-tls-'); // removed after the test file
  const f = (n: string) => join(dir, n);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-subj',
    '/CN=povdesk test CA',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  run([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    f('srv.key'),
    '-out',
    f('srv.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ]);
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > ${f('ext.cnf')}`]);
  run([
    'x509',
    '-req',
    '-in',
    f('srv.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('srv.pem'),
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
  ]);
  return {
    key: readFileSync(f('srv.key'), 'utf8'),
    cert: readFileSync(f('srv.pem'), 'utf8'),
    ca: readFileSync(f('ca.pem'), 'utf8'),
    caFile: f('ca.pem'),
    dir,
  };
}

/** The first line a TCP server at host:port sends (an SSH banner through a forward). */
export function firstLine(address: string): Promise<string> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const s = connect({ host: host!, port: Number(port) });
    s.once('data', (d) => (resolve(d.toString().split('\n')[0]!), s.destroy()));
    s.once('error', reject);
  });
}
