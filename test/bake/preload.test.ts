/**
 * bake.start preloadImages, its checks: each path must lie in the allowed dirs and be a
 * docker-archive tar whose manifest.json tags every image; a bad one fails the bake before
 * anything is made. (A bake that preloads the test agent and proves it loaded before the runner
 * ran is test/lab/control-node-guest.test.ts, through ensureControlNodeImage.)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BakeArgs } from '../../shared/contract/bake';
import { checkPreloadImages, preloadScript, preloadUnit } from '../../main/services/bake/preload';
import { guestInstallScript } from '../../main/services/bake/customize';
import { probePayload } from '../../main/services/bake/proof';
import { AGENT_REF, agentImageTar } from '../lab/agent-image';
import { tarBytes } from '../lab/tar';
import { needs } from '../support/system';
import { bakeSkip, bakeWorld, leftovers, type BakeWorld } from './support';

const tarSkip = needs(['tar', '/bin/busybox']);

describe.skipIf(tarSkip)('preloadImages: checked before a bake makes anything', () => {
  let dir: string;
  let allowed: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'preload-'));
    allowed = join(dir, 'allowed');
    mkdirSync(allowed);
    writeFileSync(join(allowed, 'agent.tar'), agentImageTar());
    writeFileSync(join(allowed, 'notes.tar'), 'not a tar at all\n'.repeat(64));
    writeFileSync(join(allowed, 'no-manifest.tar'), tarBytes([{ name: 'hello.txt', type: 'file', mode: 0o644, data: Buffer.from('hi') }]));
    const manifest = (m: unknown) => tarBytes([{ name: 'manifest.json', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify(m)) }]);
    writeFileSync(join(allowed, 'bad-manifest.tar'), manifest({ Config: 'x' }));
    writeFileSync(join(allowed, 'untagged.tar'), manifest([{ Config: 'c.json', RepoTags: null, Layers: ['l/layer.tar'] }]));
    writeFileSync(join(allowed, 'shell.tar'), manifest([{ Config: 'c.json', RepoTags: ["x:1'; reboot #"], Layers: ['l/layer.tar'] }]));
    writeFileSync(join(allowed, 'agent-again.tar'), agentImageTar());
    writeFileSync(join(dir, 'outside.tar'), agentImageTar());
    symlinkSync(join(dir, 'outside.tar'), join(allowed, 'link.tar'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes a docker-archive with a tagged image and names its refs and checksum', async () => {
    const [img] = await checkPreloadImages([join(allowed, 'agent.tar')], [allowed]);
    expect(img).toMatchObject({
      path: join(allowed, 'agent.tar'),
      refs: [AGENT_REF],
      bytes: agentImageTar().length,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it.each([
    ['outside.tar', '', /outside the directories a bake may read/],
    ['link.tar', '', /outside\.tar is outside/],
    ['missing.tar', 'allowed', /does not exist/],
    ['notes.tar', 'allowed', /not a docker-archive tar .*no readable manifest\.json/],
    ['no-manifest.tar', 'allowed', /no readable manifest\.json/],
    ['bad-manifest.tar', 'allowed', /manifest\.json is not a docker-archive manifest/],
    ['untagged.tar', 'allowed', /an image without a tag/],
    ['shell.tar', 'allowed', /an image reference like name:tag/],
  ])('refuses %s', async (file, sub, message) => {
    const path = sub ? join(dir, sub, file) : file === 'link.tar' ? join(allowed, file) : join(dir, file);
    await expect(checkPreloadImages([path], [allowed])).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(message),
    });
  });

  it('refuses the same file twice and one ref in two archives', async () => {
    await expect(checkPreloadImages([join(allowed, 'agent.tar'), join(allowed, 'agent.tar')], [allowed])).rejects.toThrow(/twice/);
    await expect(checkPreloadImages([join(allowed, 'agent.tar'), join(allowed, 'agent-again.tar')], [allowed])).rejects.toThrow(
      /povdesk\/test-agent:1 is in two/,
    );
  });

  it('the guest side: the unit loads before the runner and is required by it; the probe checks each ref', () => {
    expect(preloadUnit()).toMatch(/After=docker\.service/);
    expect(preloadUnit()).toMatch(/Before=dashboard-bootstrap-runner\.service/);
    expect(preloadUnit()).toMatch(/RequiredBy=dashboard-bootstrap-runner\.service/);
    expect(preloadScript()).toMatch(/docker load -i "\$f"\n {2}rm -f "\$f"/);
    expect(guestInstallScript({ enableDocker: true, preload: true })).toContain('systemctl enable povdesk-preload-images.service');
    expect(guestInstallScript({ enableDocker: true })).not.toContain('povdesk-preload-images');
    expect(probePayload('0123456789abcdef', [AGENT_REF])).toContain(`for ref in '${AGENT_REF}'; do`);
    expect(() => probePayload('0123456789abcdef', ['x; reboot'])).toThrow(/not an image reference/);
  });

  it("the probe's image check, run by a shell against a docker that knows one of two refs, names the missing one", () => {
    const payload = probePayload('0123456789abcdef', ['povdesk/a:1', 'b:2']);
    const check = payload.slice(payload.indexOf('i=ok'), payload.indexOf('c=failed'));
    const bin = mkdtempSync(join(dir, 'bin-'));
    writeFileSync(join(bin, 'docker'), '#!/bin/sh\n[ "$1 $2 $3" = "image inspect povdesk/a:1" ]\n', { mode: 0o755 });
    const run = () =>
      execFileSync('/bin/sh', ['-c', `${check}echo "$i"`], { env: { PATH: `${bin}:/usr/bin:/bin` }, encoding: 'utf8' }).trim();
    expect(run()).toBe('missing:b:2,');
    writeFileSync(join(bin, 'docker'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(run()).toBe('ok');
  });
});

describe.skipIf(bakeSkip() !== null)('bake.start with bad preloadImages: a clear error, nothing left', () => {
  let w: BakeWorld;
  beforeAll(async () => {
    w = await bakeWorld();
    writeFileSync(join(w.sources, 'notes.tar'), 'not a tar\n');
    writeFileSync(join(w.sources, 'agent.tar'), agentImageTar());
  });
  afterAll(async () => {
    await w?.close();
  });

  it('refuses a bad archive and preloading without Docker before making anything', async () => {
    const cases: [BakeArgs, RegExp][] = [
      [{ source: { debian: 'bookworm' }, name: 'pre-bad', preloadImages: [join(w.sources, 'notes.tar')] }, /not a docker-archive tar/],
      [
        { source: { debian: 'bookworm' }, name: 'pre-skip', docker: 'skip', preloadImages: [join(w.sources, 'agent.tar')] },
        /needs Docker in the guest/,
      ],
    ];
    for (const [args, message] of cases) {
      const job = await w.jobs.wait(w.svc.start(args));
      expect(job.state).toBe('failed');
      expect(job.error?.code).toBe('invalid_request');
      expect(job.error?.message).toMatch(message);
      expect(await leftovers(w, args.name)).toEqual([]);
    }
  });
});
