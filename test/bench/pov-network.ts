// A POV's network and its clean state (issue 34), with two real guests (TCG) on the real manager:
//  - throughput from one guest to the other straight over their network (vde_switch) against the
//    same two guests through the host (the sender's guest→host forward, a relay on loopback, the
//    receiver's host forward): busybox dd | nc inside the guests, timed by the sender's uptime;
//    ratio network / through the host (higher is better);
//  - reset (put back the clean state saved while both were ready, memory included, until both are
//    ready again after a fresh verified quote) against a fresh create of the same two VMs (create →
//    both ready), target ≤ 0.2.
// One round (two boots in parallel, three times): a TCG boot takes 15–40 s on a shared 2-core machine.
import { createServer, connect, type Server } from 'node:net';
import { rmSync } from 'node:fs';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve } from '../../main/vm-manager/server';
import { freeLoopbackPort } from '../../main/lib/procs';
import { GUEST_HOST_ALIAS } from '../../main/vm-api/povdesk';
import { needs } from '../support/system';
import { stateWithImage, TestClient, until, vmSkip } from '../vm-manager/support';

const skip = vmSkip() ?? needs(['vde_switch', 'vde_plug', 'ssh']);
if (skip) {
  console.log(`bench pov-network: skipped (${skip})`);
  process.exit(0);
}
const MIB = 128; // the sender's uptime counts in 10 ms steps: the fast path must take tenths of seconds
const s = (ms: number) => (ms / 1000).toFixed(2);
const state = stateWithImage('bench-povnet-');
// dieWithParent: a bench that dies leaves no guest running on the shared cores
const m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE], dieWithParent: true });
const c = new TestClient(m.url, 'tok');
let relay: Server | null = null;
try {
  await c.call('POST', '/networks', { name: 'bench', cidr: '10.88.0.0/24' });
  const relayPort = await freeLoopbackPort();
  const size = { cpus: 1, memory_mib: 768, network: 'bench', wait_for: 'none' as const };
  const ready = (ids: string[]) =>
    Promise.all(
      ids.map((id) =>
        until(
          `${id} ready`,
          async () => {
            const v = await c.get(id);
            if (v.state === 'failed') throw new Error(`VM ${id} failed: ${v.lastError}`);
            return v.state === 'ready' && v;
          },
          280_000,
          250,
        ),
      ),
    );

  const t0 = Date.now();
  const made = await Promise.all([
    c.create({ name: 'sender', ...size, povdesk: { host_forwards: [{ guest_port: 5003, host_port: relayPort }] } } as never),
    c.create({ name: 'receiver', ...size }),
  ]);
  const [a, b] = await ready(made.map((v) => v.id));
  const createMs = Date.now() - t0;
  console.log(`bench pov-network create: two VMs create → ready ${s(createMs)} s`);

  // The host path: the receiver's port 5002 on the host's loopback, relayed from the sender's forward.
  const fwd = await c.forward(b!.id, 5002);
  const [fhost, fport] = fwd.address.split(':');
  relay = createServer((sock) => {
    const up = connect(Number(fport), fhost!);
    sock.on('error', () => up.destroy());
    up.on('error', () => sock.destroy());
    sock.pipe(up).pipe(sock);
  });
  await new Promise<void>((r) => relay!.listen(relayPort, '127.0.0.1', r));

  // to:port is what the sender dials; the receiver listens on `listen` (through the host: its forwarded port)
  const send = async (to: string, port: number, listen = port): Promise<number> => {
    // The receiver counts what arrived, so a transfer cut short is an error, not a figure. Its stdin
    // never ends: busybox nc given a closed stdin (the exec's, once it returns) gives up after one read.
    await c.exec(b!.id, [
      'sh',
      '-c',
      `rm -f /tmp/got.${listen}; (sleep 600 | nc -l -p ${listen} | wc -c > /tmp/got.${listen}) > /dev/null 2>&1 &`,
    ]);
    const out = await c.exec(a!.id, [
      'sh',
      '-c',
      `s=$(cut -d' ' -f1 /proc/uptime); dd if=/dev/zero bs=65536 count=${MIB * 16} 2>/dev/null | nc -w 10 ${to} ${port}; ` +
        `e=$(cut -d' ' -f1 /proc/uptime); echo "$s $e"`,
    ]);
    const [st, en] = out.stdout.trim().split(/\s+/).slice(-2).map(Number);
    if (!(en! > st!)) throw new Error(`no timing from the sender: ${out.stdout} ${out.stderr}`);
    const got = await until(
      `the receiver's count on ${listen}`,
      async () => Number((await c.exec(b!.id, ['sh', '-c', `cat /tmp/got.${listen} 2>/dev/null`])).stdout.trim()) || null,
      30_000,
      500,
    );
    if (got !== MIB * 1024 * 1024) throw new Error(`the receiver got ${got} bytes of ${MIB * 1024 * 1024} on port ${listen}`);
    return MIB / (en! - st!);
  };
  const lan = await send(b!.ip!, 5001);
  const viaHost = await send(GUEST_HOST_ALIAS, 5003, 5002);
  console.log(
    `bench pov-network throughput: network ${lan.toFixed(1)} MiB/s vs through the host ${viaHost.toFixed(1)} MiB/s ` +
      `ratio ${(lan / viaHost).toFixed(3)} (higher is better; ${MIB} MiB each)`,
  );

  // The clean state: saved once while both are ready (with their memory; they run on from it), then a reset measured.
  const ids = [a!.id, b!.id];
  for (const id of ids) await c.call('POST', `/vms/${id}/povdesk/save-clean`);
  await ready(ids);
  await c.exec(a!.id, ['sh', '-c', 'echo dirty | dd of=/dev/vda 2>/dev/null; sync']);
  const r0 = Date.now();
  const answers = await Promise.all(
    ids.map((id) => c.call<{ povdesk: { lastReset: { memory: boolean; note: string | null } } }>('POST', `/vms/${id}/povdesk/reset-clean`)),
  );
  const cold = answers.map((x) => x.povdesk.lastReset).filter((x) => !x.memory);
  if (cold.length) throw new Error(`a reset did not resume the saved memory: ${cold.map((x) => x.note).join('; ')}`);
  await ready(ids);
  const resetMs = Date.now() - r0;
  console.log(
    `bench pov-network reset: clean state (memory resumed) to both ready after a fresh quote ${s(resetMs)} s vs fresh ` +
      `create ${s(createMs)} s ratio ${(resetMs / createMs).toFixed(3)} target 0.2`,
  );
} finally {
  relay?.close();
  await m.close({ stopVms: true });
  rmSync(state, { recursive: true, force: true });
}
