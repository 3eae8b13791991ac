import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { checkPemBundle, checkTrustDomain, parseHostPort } from './shell';

export type SpireCheck = { offered: true; answered: boolean; message: string } | { offered: false; address: string; message: string };

export interface SpireCheckInput {
  /** host or host:port (default port 8081): the address control nodes are sent to. */
  address: string;
  trustDomain: string;
  /** PEM: the dashboard's own SPIRE trust bundle. */
  trustBundle: string;
  timeoutMs?: number;
}

/**
 * Before SPIRE is offered to a control node: open TLS to the SPIRE server address and require a
 * certificate that chains to this dashboard's trust bundle and names
 * spiffe://<trust domain>/spire/server. Something else answering (another dashboard's server, a
 * web server, a TLS-inspecting proxy) means SPIRE is not offered and the address is named to fix.
 * Nothing answering is offered anyway: it proves nothing about the guest's own network.
 */
export function checkSpireServer(input: SpireCheckInput): Promise<SpireCheck> {
  const { host, port } = parseHostPort(input.address);
  const td = checkTrustDomain(input.trustDomain);
  const ca = checkPemBundle(input.trustBundle);
  const want = `spiffe://${td}/spire/server`;
  const address = `${host}:${port}`;
  const timeoutMs = input.timeoutMs ?? 5000;
  const fix = `fix "SPIRE server address for agents" in Settings (now ${address})`;

  return new Promise((resolve) => {
    let tcpUp = false;
    let done = false;
    const finish = (r: SpireCheck) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const socket = connect({
      host,
      port,
      ca,
      rejectUnauthorized: false, // judged below, so the message can say what was wrong
      checkServerIdentity: () => undefined, // SPIRE servers carry a SPIFFE URI, not a DNS name
      ALPNProtocols: ['h2'],
      ...(isIP(host) ? {} : { servername: host }),
    });
    socket.once('connect', () => {
      tcpUp = true;
    });
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      const uris = (cert.subjectaltname ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.startsWith('URI:'))
        .map((s) => s.slice(4));
      if (!socket.authorized) {
        finish({
          offered: false,
          address,
          message:
            `${address} answered with a certificate that does not chain to this dashboard's SPIRE trust bundle ` +
            `(${String(socket.authorizationError)}${uris.length ? `; it names ${uris.join(', ')}` : ''}): ` +
            `another SPIRE server or a TLS-inspecting proxy is there; ${fix}`,
        });
      } else if (!uris.includes(want)) {
        finish({
          offered: false,
          address,
          message: `${address} answered with a certificate naming ${uris.join(', ') || 'no SPIFFE ID'}, not ${want}; ${fix}`,
        });
      } else {
        finish({ offered: true, answered: true, message: `SPIRE server ${address} verified as ${want}` });
      }
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      if (tcpUp) {
        finish({
          offered: false,
          address,
          message: `${address} accepted a connection but did not complete TLS as a SPIRE server (${err.code ?? err.message}); ${fix}`,
        });
      } else {
        finish({
          offered: true,
          answered: false,
          message:
            `nothing answered at ${address} from the dashboard (${err.code ?? err.message}); SPIRE is offered anyway, since that ` +
            `proves nothing about the guest's network`,
        });
      }
    });
    const timer = setTimeout(() => {
      if (tcpUp) {
        finish({ offered: false, address, message: `${address} accepted a connection but never completed a TLS handshake; ${fix}` });
      } else {
        finish({
          offered: true,
          answered: false,
          message:
            `nothing answered at ${address} within ${timeoutMs} ms; SPIRE is offered anyway, since that proves nothing about the ` +
            `guest's network`,
        });
      }
    }, timeoutMs);
  });
}
