/**
 * The proof's container check (main/services/bake/proof.ts), run by the shells a guest may
 * have against a stand-in `docker` (the real one only exists in a guest: test/bake/bake.test.ts
 * proves it there). The stand-in runs the imported image for real, with chroot, so the tar the
 * check builds from this machine's /bin/sh and the libraries ldd names must be a working root
 * file system; and it refuses `run` the way dockerd does without apparmor_parser.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerCheck, probePayload } from '../../main/services/bake/proof';
import { needs } from '../support/system';

const SHELLS = ['/bin/sh', '/bin/dash', '/bin/bash', '/bin/busybox'];
const APPARMOR = 'docker: Error response from daemon: AppArmor enabled on system but the docker-default profile could not be loaded.';
const skip =
  needs([...SHELLS, 'tar', 'ldd', 'chroot', 'timeout']) ??
  (process.getuid?.() !== 0 ? 'not running as root: the stand-in docker runs the image with chroot' : null);

/** Records each call; import keeps the tar, run extracts it and runs the command in a chroot. */
const FAKE_DOCKER = `#!/bin/sh
echo "$*" >> "$FAKE/calls"
case "$1" in
  import) cat > "$FAKE/image.tar" ;;
  run)
    [ -n "$FAKE_REFUSE" ] && { echo "$FAKE_REFUSE" >&2; exit 125; }
    while [ $# -gt 0 ] && [ "\${1#povdesk-proof:}" = "$1" ]; do shift; done
    shift
    rm -rf "$FAKE/rootfs" && mkdir "$FAKE/rootfs" && tar -xf "$FAKE/image.tar" -C "$FAKE/rootfs" || exit 1
    exec chroot "$FAKE/rootfs" "$@" ;;
  rmi) ;;
  *) exit 2 ;;
esac
`;

describe.skipIf(skip)('the proof runs a container, not only asks whether docker.service is enabled', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'proof-container-'));
    writeFileSync(join(dir, 'docker'), FAKE_DOCKER, { mode: 0o755 });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (shell: string, refuse?: string) => {
    for (const f of ['calls', 'console', 'image.tar']) rmSync(join(dir, f), { force: true });
    const script = `e='${dir}/console'\n${containerCheck('0123456789abcdef')}echo "$c"\n`;
    const args = shell === '/bin/busybox' ? ['sh', '-c', script] : ['-c', script];
    const out = execFileSync(shell, args, {
      env: { PATH: `${dir}:/usr/sbin:/usr/bin:/sbin:/bin`, FAKE: dir, ...(refuse ? { FAKE_REFUSE: refuse } : {}) },
      encoding: 'utf8',
    }).trim();
    const calls = readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
    const console = existsSync(join(dir, 'console')) ? readFileSync(join(dir, 'console'), 'utf8') : '';
    return { out, calls, console };
  };

  it.each(SHELLS)("%s: an image of the guest's own /bin/sh is imported, runs with no network, and is removed", (shell) => {
    const r = run(shell);
    expect(r.out).toBe('ok');
    expect(r.calls).toEqual([
      'import - povdesk-proof:0123456789abcdef',
      'run --rm --network none povdesk-proof:0123456789abcdef /bin/sh -c echo ran',
      'rmi -f povdesk-proof:0123456789abcdef',
    ]);
    const members = execFileSync('tar', ['-tf', join(dir, 'image.tar')], { encoding: 'utf8' });
    expect(members).toMatch(/^bin\/sh$/m);
    expect(members).toMatch(/libc\.so\.6$/m);
    expect(r.console).toBe('');
  });

  it('a Docker that refuses containers fails the check, its error on the console, and the image is still removed', () => {
    const r = run('/bin/sh', APPARMOR);
    expect(r.out).toBe('failed');
    expect(r.console).toContain('docker-default profile could not be loaded');
    expect(r.calls.at(-1)).toBe('rmi -f povdesk-proof:0123456789abcdef');
  });

  it('the payload carries the check only where the bake kept Docker, and reports it on the probe line', () => {
    expect(probePayload('0123456789abcdef')).toContain(containerCheck('0123456789abcdef'));
    expect(probePayload('0123456789abcdef')).toContain('container=$c');
    const skipped = probePayload('0123456789abcdef', [], false);
    expect(skipped).not.toContain('docker run');
    expect(skipped).toContain('c=skipped');
  });
});
