/**
 * One local POV on the real vm-manager (in-process daemon, real QEMU + swtpm + OVMF under TCG, the
 * cached test image): pov.create {platform: 'local'} from the bundled test template through the
 * real core (its ConnectedVmManager reattaches to this manager as its local one, the production wiring),
 * suspend (the vm-manager's stop) and start (a cold boot from disk), save the clean state and reset
 * to it (the memory resumed, ready after a fresh quote), destroy. Afterwards no qemu or swtpm process
 * mentions the state dir and the manager has no VM record. One VM, two boots: the only real boots of
 * the platform suites (2 cores are shared). Then a two-VM POV on its own network
 * (issue 34): both /32s in the control node's policy, the other VM's SSH port answering the control node.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { execInGuest } from '../../main/vm-manager/exec';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { testCore, type TestCore } from '../support/core';
import { attachLocalManager } from '../vm/helpers';
import { pidsWith, stateWithImage, until, vmSkip } from '../vm-manager/support';

const skip = vmSkip();

describe.skipIf(skip !== null)('a local POV on the real vm-manager (TCG)', () => {
  let state = '';
  let m: RunningManager | null = null;
  let t: TestCore;

  beforeAll(async () => {
    state = stateWithImage('vmm-localpov-');
    // learn mode: the cached test image may carry no golden values for this host yet (as the other boot suites)
    m = await serve({ stateDir: state, token: 'localpov-token-0123456789', learn: [TEST_IMAGE] });
    t = await testCore({ env: { POVDESK_SKYTAP_POLL_MS: '250' } });
    attachLocalManager(t.home, { url: m.url, token: 'localpov-token-0123456789', stateDir: state });
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    await m?.close({ stopVms: true });
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it('create → running, suspend → stopped, start → running, save and reset → resumed, destroy → no VM or qemu/swtpm left', async () => {
    const t0 = Date.now();
    const { jobId } = await t.call('pov.create', { platform: 'local', templateId: TEST_TEMPLATE_ID, name: 'Rehearsal on TCG' });
    const job = await t.jobs.wait(jobId);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const povId = job.subject!;
    const created = Date.now() - t0;
    const got = await t.call('pov.get', { id: povId });
    expect(got.pov).toMatchObject({ platform: 'local', state: 'active', runstate: 'running', envId: `povdesk-${povId.slice(0, 8)}` });
    expect(got.vms.map((v) => [v.name, v.os])).toEqual([['test-vm', 'linux']]);
    const [rec] = await m!.vms.list();
    expect(rec).toMatchObject({
      name: `povdesk-${povId.slice(0, 8)}-test-vm`,
      cpus: 2,
      memoryMiB: 2048,
      diskGiB: 20,
      requireAttestation: true,
    });
    expect(pidsWith(state).length).toBeGreaterThanOrEqual(2); // qemu and swtpm

    const t1 = Date.now();
    const s = await t.jobs.wait((await t.call('pov.suspend', { id: povId })).jobId);
    expect(s.state, JSON.stringify(s.error)).toBe('succeeded');
    expect((await t.call('pov.get', { id: povId })).pov.runstate).toBe('stopped');
    expect((await m!.vms.list()).map((v) => v.state)).toEqual(['stopped']);
    const suspended = Date.now() - t1;

    const t2 = Date.now();
    const st = await t.jobs.wait((await t.call('pov.start', { id: povId })).jobId);
    expect(st.state, JSON.stringify(st.error)).toBe('succeeded');
    expect((await t.call('pov.get', { id: povId })).pov.runstate).toBe('running');
    const started = Date.now() - t2;

    // Save the clean state once ready (its memory too), then reset: the job says per VM that it resumed
    // from the saved memory, and the VM is ready again (after a fresh quote: it requires attestation).
    await until('the VM ready', async () => (await m!.vms.list())[0]?.state === 'ready', 240_000, 500);
    // The guest's clock an hour behind when saved, as a save made the day before the demo would be.
    const behind = await execInGuest((await m!.vms.list())[0]!, ['sh', '-c', 'date -u -s @$(( $(date +%s) - 3600 )) >/dev/null']);
    expect(behind.exitCode, behind.stderr).toBe(0);
    const t4 = Date.now();
    const sv = await t.jobs.wait((await t.call('pov.snapshot', { id: povId })).jobId);
    expect(sv.state, JSON.stringify(sv.error)).toBe('succeeded');
    const rs = await t.jobs.wait((await t.call('pov.reset', { id: povId })).jobId);
    expect(rs.state, JSON.stringify(rs.error)).toBe('succeeded');
    const log = (await t.call('jobs.get', { id: rs.id })).log.map((l) => l.message);
    expect(log).toContain(`povdesk-${povId.slice(0, 8)}-test-vm: resumed from its saved memory`);
    expect((await m!.vms.list())[0]!.lastReset).toMatchObject({ memory: true, note: null });
    await until('the VM ready after the reset', async () => (await m!.vms.list())[0]?.state === 'ready', 240_000, 500);
    const reset = Date.now() - t4;
    // resumed with the save's clock, the manager set it to the host's before it was ready again
    const clock = await execInGuest((await m!.vms.list())[0]!, ['date', '+%s']);
    expect(Math.abs(Number(clock.stdout.trim()) - Date.now() / 1000), `guest ${clock.stdout.trim()}`).toBeLessThan(10);

    const t3 = Date.now();
    const d = await t.jobs.wait((await t.call('pov.destroy', { id: povId })).jobId);
    expect(d.state, JSON.stringify(d.error)).toBe('succeeded');
    expect((await t.call('pov.get', { id: povId })).pov.state).toBe('destroyed');
    expect(await m!.vms.list()).toEqual([]);
    expect(pidsWith(state)).toEqual([]);
    console.log(
      `local POV on TCG: create ${created} ms, suspend ${suspended} ms, start ${started} ms, save + reset ${reset} ms, ` +
        `destroy ${Date.now() - t3} ms`,
    );
  }, 600_000);

  it("a two-VM local POV on its own network: payload grants both /32s; from the control node the other VM's port 22 answers", async () => {
    // A control plane nobody listens on: the install after power-on fails fast on the row, the POV stays active.
    await t.call('controlNode.saveSettings', {
      controlPlaneUrl: 'http://127.0.0.1:9',
      token: 'unused',
      agentImage: 'povdesk/test-agent:1',
    });
    const vm = { image: TEST_IMAGE, cpus: 1, memoryMib: 768, diskGib: 1, requireAttestation: false };
    const { template } = await t.call('labTemplates.create', {
      name: 'Two on one network',
      vms: [
        { name: 'control', os: 'linux', ...vm },
        { name: 'target', os: 'windows', ...vm },
      ],
    });
    const job = await t.jobs.wait(
      (await t.call('pov.create', { platform: 'local', templateId: template.id, name: 'Two VMs on TCG' })).jobId,
    );
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const povId = job.subject!;
    const tag = povId.slice(0, 8);
    const ready = await until(
      'both VMs ready',
      () => {
        const vms = m!.vms.list();
        return vms.length === 2 && vms.every((v) => v.state === 'ready') && vms;
      },
      240_000,
      1000,
    );
    const ip = (n: string) => ready.find((v) => v.name === `povdesk-${tag}-${n}`)!.lease!.ip;
    expect(ready.map((v) => v.network)).toEqual([`povdesk-${tag}`, `povdesk-${tag}`]);
    await t.jobs.wait((await t.call('pov.refreshVms', { id: povId })).jobId);
    expect((await t.call('pov.get', { id: povId })).vms.map((v) => [v.name, v.ip]).sort()).toEqual([
      ['control', ip('control')],
      ['target', ip('target')],
    ]);
    const preview = await t.call('controlNode.previewBootstrap', { povId });
    expect(preview.vm).toBe('control');
    for (const n of ['control', 'target']) expect(preview.policy).toContain(`cidr: ${ip(n)}/32`);
    const control = ready.find((v) => v.name === `povdesk-${tag}-control`)!;
    const out = await execInGuest(control, ['sh', '-c', `echo | nc -w 5 ${ip('target')} 22 | head -c 20`]);
    expect(out.stdout).toMatch(/^SSH-2\.0-dropbear/);
    const d = await t.jobs.wait((await t.call('pov.destroy', { id: povId })).jobId);
    expect(d.state, JSON.stringify(d.error)).toBe('succeeded');
    expect(await m!.vms.list()).toEqual([]);
  }, 600_000);
});
