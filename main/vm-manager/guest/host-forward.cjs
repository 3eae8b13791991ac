// Run by QEMU (guestfwd cmd) once per guest connection to GUEST_HOST_ALIAS:<guest port> (a VM's
// povdesk.host_forwards): pipes the connection (our stdin/stdout) to 127.0.0.1:<host port> on the
// manager's host. The guest picks neither the host nor the port: QEMU holds this argv.
//   host-forward.cjs <vm-id> <host-port>
'use strict';
const net = require('node:net');
const [vmId, portText] = process.argv.slice(2);
const port = Number(portText);
if (!vmId || !/^[a-z0-9-]+$/.test(vmId) || !Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write('usage: host-forward.cjs <vm-id> <host-port>\n');
  process.exit(2);
}
const conn = net.connect(port, '127.0.0.1');
conn.on('connect', () => {
  process.stdin.pipe(conn);
  conn.pipe(process.stdout);
});
conn.on('error', () => process.exit(1));
conn.on('close', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
// The guest closed its side: the host's answer may still be on its way; then go.
process.stdin.on('end', () => conn.end());
process.stdin.on('close', () => setTimeout(() => process.exit(0), 5000).unref());
process.stdout.on('error', () => process.exit(0));
// A connection idle for 5 minutes is dropped (it holds one of the forward's slots).
conn.setTimeout(300000, () => process.exit(0));
