/**
 * The tiny test agent image: a docker-archive `docker load` takes (checked member by member, as
 * the loader checks it: the manifest names the config, the config's diff_id is the layer's
 * sha256), and its entrypoint, run by the host's busybox against the control-plane double, redeems
 * its code with retries and then stays up. Loading it into Docker and running it through the
 * payload happens in a guest: test/lab/control-node-guest.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpControlPlane } from '../../main/services/control-node/control-plane';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { needs } from '../support/system';
import { until } from '../vm-manager/support';
import { AGENT_REF, AGENT_SCRIPT, AGENT_UID, buildAgentImage, dockerArchive } from './agent-image';
import { readTar } from './tar';

const skip = needs(['/bin/busybox']);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.skipIf(skip)('the test agent image', () => {
  let dir: string;
  let cp: ControlPlaneDouble;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-image-'));
    cp = await new ControlPlaneDouble().start();
  });
  afterAll(async () => {
    for (const p of started) if (p.exitCode === null) p.kill('SIGKILL');
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'is a docker-archive: manifest → config → one layer whose sha256 is the diff_id; busybox, sh, the entrypoint, uid 10001; equal ' +
      'input, equal bytes',
    async () => {
      const img = await buildAgentImage(join(dir, 'out'));
      expect(img.ref).toBe(AGENT_REF);
      const bytes = readFileSync(img.path);
      expect(sha256(bytes)).toBe(img.sha256);
      const again = await buildAgentImage(join(dir, 'again'));
      expect(again.sha256).toBe(img.sha256);

      const { manifest, get } = dockerArchive(bytes);
      expect(manifest).toHaveLength(1);
      const m = manifest![0]!;
      expect(m.RepoTags).toEqual([AGENT_REF]);
      const configBytes = get(m.Config)!.data;
      expect(m.Config).toBe(`${sha256(configBytes)}.json`);
      const config = JSON.parse(configBytes.toString('utf8'));
      expect(config).toMatchObject({
        architecture: 'amd64',
        os: 'linux',
        config: { User: `${AGENT_UID}:${AGENT_UID}`, Entrypoint: ['/bin/sh', '/agent.sh'] },
      });
      expect(m.Layers).toHaveLength(1);
      const layer = get(m.Layers[0]!)!.data;
      expect(config.rootfs).toEqual({ type: 'layers', diff_ids: [`sha256:${sha256(layer)}`] });

      const files = new Map(readTar(layer).map((f) => [f.name.replace(/\/$/, ''), f]));
      expect(files.get('bin/busybox')?.data.equals(readFileSync('/bin/busybox'))).toBe(true);
      expect(files.get('bin/busybox')?.mode).toBe(0o755);
      expect(files.get('bin/sh')).toMatchObject({ type: '2', linkname: 'busybox' });
      expect(files.get('agent.sh')?.data.toString('utf8')).toBe(AGENT_SCRIPT);
      expect(files.get('tmp')?.mode).toBe(0o1777);
      expect(files.get('var/lib/dashboard-agent')).toMatchObject({ type: '5', uid: AGENT_UID, gid: AGENT_UID, mode: 0o700 });
    },
  );

  it(
    'the entrypoint retries every 2 s, logging each try, until its code is taken; then it stays up and a restart does not redeem ' +
      'again',
    async () => {
      const client = new HttpControlPlane(cp.url, cp.token);
      const code = await client.mintEnrolmentCode('pov-agent-image');
      const script = join(dir, 'agent.sh');
      writeFileSync(script, AGENT_SCRIPT);
      const codeFile = join(dir, 'code');
      writeFileSync(codeFile, 'enr_wrong\n');
      const state = mkdtempSync(join(dir, 'state-'));
      const env = {
        PATH: '/usr/bin:/bin',
        AGENT_ID: code.agentId,
        AGENT_CONTROL_PLANE_URL: `${cp.url}/`,
        AGENT_ENROLMENT_CODE_FILE: codeFile,
        AGENT_STATE_DIR: state,
      };
      const run = () => {
        const p = spawn('/bin/busybox', ['sh', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        started.push(p);
        let out = '';
        p.stdout.on('data', (d: Buffer) => (out += d.toString()));
        p.stderr.on('data', (d: Buffer) => (out += d.toString()));
        return { p, out: () => out };
      };
      const first = run();
      await until(
        'two refused tries',
        () => cp.redemptions.filter((r) => r.agentId === code.agentId && r.status === 403).length >= 2,
        20_000,
      );
      const [a, b] = cp.redemptions.filter((r) => r.agentId === code.agentId);
      expect(b!.at - a!.at).toBeGreaterThanOrEqual(1900);
      expect(await client.enrolmentState(code.agentId)).toMatchObject({ state: 'pending' });
      writeFileSync(codeFile, `${code.code}\n`);
      await until('enrolled', async () => (await client.enrolmentState(code.agentId)).state === 'enrolled', 20_000);
      expect(await client.enrolmentState(code.agentId)).toMatchObject({ attestation: 'ed25519' });
      await until('the success line', () => first.out().includes('enrolled ('), 5_000);
      expect(first.out()).toMatch(/test-agent: try 1: POST http:\/\/127\.0\.0\.1:\d+\/v1\/agents\/[^/]+\/enrol failed: .*403/);
      expect(first.out()).toMatch(/test-agent: try \d+: POST .*: enrolled \(\{"state":"enrolled"\}\)/);
      await new Promise((r) => setTimeout(r, 500));
      expect(first.p.exitCode).toBeNull(); // stays up
      expect(readFileSync(join(state, 'enrolled'), 'utf8').trim()).toBe(code.agentId);
      first.p.kill('SIGKILL');

      const tries = cp.redemptions.length;
      const second = run();
      await until('the restart line', () => second.out().includes('already enrolled'), 5_000);
      await new Promise((r) => setTimeout(r, 2500));
      expect(cp.redemptions.length).toBe(tries);
      expect(second.p.exitCode).toBeNull();
      second.p.kill('SIGKILL');
    },
    60_000,
  );
});
