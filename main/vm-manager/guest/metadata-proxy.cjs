// Run by QEMU (guestfwd cmd) once per guest connection to 169.254.169.254:80: pipes the
// connection (our stdin/stdout) to the vm-manager's metadata socket, after one preamble line
// naming the VM, so the server knows who asks. The guest cannot forge it: QEMU holds this argv.
'use strict';
const net = require('node:net');
const [sock, vmId] = process.argv.slice(2);
if (!sock || !vmId || !/^[a-z0-9-]+$/.test(vmId)) {
  process.stderr.write('usage: metadata-proxy.cjs <socket> <vm-id>\n');
  process.exit(2);
}
const conn = net.connect(sock);
conn.on('connect', () => {
  conn.write(`POVDESK-VM ${vmId}\n`);
  process.stdin.pipe(conn);
  conn.pipe(process.stdout);
});
conn.on('error', () => process.exit(1));
conn.on('close', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
// QEMU gone (stdin closed) or a connection that hangs: never linger.
process.stdin.on('close', () => setTimeout(() => process.exit(0), 2000).unref());
setTimeout(() => process.exit(0), 120000).unref();
process.stdout.on('error', () => process.exit(0));
