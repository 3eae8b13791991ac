import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BootstrapInput } from '../../main/services/control-node/payload';

export function baseInput(root: string, over: Partial<BootstrapInput> = {}): BootstrapInput {
  return {
    povId: 'pov-42',
    agentId: 'agt_7f3a',
    controlNodeName: 'BtPocLin01',
    vms: [
      { name: 'BtPocLin01', ip: '10.0.0.10' },
      { name: 'DC01', ip: '10.0.0.11' },
      { name: 'App01', ip: '10.0.0.12' },
    ],
    enrolmentCode: 'ENR-abc123-XYZ',
    agentImage: 'registry.example.com/povdesk/agent:1.4.2',
    controlPlaneUrl: 'https://cp.example.com/agents',
    root,
    ...over,
  };
}

/**
 * A self-signed P-256 CA made with the openssl CLI in `dir` (its key `<name>.key` and certificate
 * `<name>.pem`, kept there to sign with), returned as a PEM string.
 */
export function makeCa(dir: string, name: string, subject = `/CN=${name}`): string {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      subject,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return readFileSync(join(dir, `${name}.pem`), 'utf8');
}

/** A self-signed CA made with the openssl CLI, as a PEM string (a real trust bundle). */
export function makeBundle(): string {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-pem-'));
  try {
    return makeCa(dir, 'c', '/CN=test bundle');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
