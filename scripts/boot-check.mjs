#!/usr/bin/env node
// One boot of the test image through the built vm-manager daemon, on whatever this host is: the
// release workflow runs it on macOS and Windows with an image built on Linux (the image is made from
// Debian packages), so process supervision, the QEMU/swtpm/firmware finders and TCG are exercised
// where SE laptops are.
//
//   node scripts/boot-check.mjs <state-dir>     (the state dir holds images/<test image>/)
//
// Starts `out/vm-manager/vm-manager.mjs serve` on that state dir, creates one VM from the test image
// without attestation (its golden values belong to the firmware of the host that built it), waits
// until the guest is ready, deletes it and stops the daemon. Exit 0 when the guest reached ready;
// otherwise 1 with the daemon's answer and the console tail.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const root = join(import.meta.dirname, '..');
const stateDir = process.argv[2] ? resolve(process.argv[2]) : null;
const daemon = join(root, 'out', 'vm-manager', 'vm-manager.mjs');
if (!stateDir || !existsSync(join(stateDir, 'images'))) {
  console.error('usage: node scripts/boot-check.mjs <state-dir holding images/<test image>/>');
  process.exit(2);
}
if (!existsSync(daemon)) {
  console.error(`no ${daemon}: run \`npx electron-vite build\` first`);
  process.exit(2);
}

const token = randomBytes(16).toString('hex');
const child = spawn(process.execPath, [daemon, 'serve', '--state-dir', stateDir, '--port', '0', '--token', token, '--stop-vms-on-exit'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const started = await new Promise((res, rej) => {
  const lines = createInterface({ input: child.stdout });
  lines.once('line', (line) => res(JSON.parse(line)));
  child.once('exit', (code) => rej(new Error(`the vm-manager exited (${code}) before it listened`)));
});
const api = async (method, path, body) => {
  const r = await fetch(`${started.url}/api/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
};

let ok = false;
try {
  const host = await api('GET', '/host');
  console.log(`host: ${JSON.stringify(host.json?.povdesk?.accelerator ?? host.json)}`);
  const images = await api('GET', '/images');
  // giantswarm's document names an image by its `id`
  const image = images.json?.[0]?.id;
  if (!image) throw new Error(`no image in ${stateDir}/images`);
  const t = performance.now();
  const vm = await api('POST', '/vms', { name: 'boot-check', image, require_attestation: false, wait_for: 'ready' });
  const secs = ((performance.now() - t) / 1000).toFixed(1);
  if (vm.status !== 201 || vm.json?.state !== 'ready') {
    const id = vm.json?.id ?? /[0-9a-f]{8}/.exec(vm.json?.error?.message ?? '')?.[0];
    const tail = id ? await api('GET', `/vms/${id}/console?lines=60`) : null;
    throw new Error(`the VM did not reach ready after ${secs} s: ${JSON.stringify(vm.json)}\n${tail?.json?.console ?? ''}`);
  }
  console.log(`boot-check: ${image} reached ready in ${secs} s (accelerator ${vm.json.povdesk?.accel ?? started.accelerator})`);
  await api('DELETE', `/vms/${vm.json.id}`);
  ok = true;
} catch (err) {
  console.error(`boot-check failed: ${err.message}`);
} finally {
  child.kill('SIGTERM');
}
process.exitCode = ok ? 0 : 1;
