/**
 * The bake itself, inside libguestfs's appliance with no guest network: the fetched .debs are
 * copied in and installed with dpkg, the runner and its unit (generated from the same marker
 * constants as the payload) are written and enabled, the attestation agent and its unit
 * (attest-agent.ts) too, Docker is enabled at boot, cloud-init is disabled, the build manifest
 * goes to /etc/povdesk/, and the machine-id is emptied so every VM made from the template gets
 * its own.
 */
import { copyFileSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_PATH, UNIT_NAME } from '../control-node/runner';
import { PRELOAD_DIR, PRELOAD_SCRIPT, PRELOAD_UNIT, preloadScript, preloadUnit } from './preload';
import { ATTEST_SCRIPT, ATTEST_UNIT } from './attest-agent';
import { AppError } from '../../../shared/contract/errors';
import type { GuestSession } from './fish';
import { fishWord } from './tools';

export const GUEST_MANIFEST = '/etc/povdesk/template-manifest.json';
const STAGING = '/var/cache/povdesk-bake';
const EXIT_MARK = 'povdesk-install-exit=';

/** Runs inside the guest (chroot in libguestfs's appliance). No network; dpkg only. */
export function guestInstallScript(o: { enableDocker: boolean; preload?: boolean; attest?: boolean }): string {
  return `#!/bin/sh
set -eu
export DEBIAN_FRONTEND=noninteractive
D=${STAGING}
if ls "$D"/debs/*.deb >/dev/null 2>&1; then
  # unsafe-io: no fsync per file (minutes under TCG); libguestfs syncs the disk when it closes
  dpkg --force-unsafe-io -i "$D"/debs/*.deb
fi
systemctl enable ${UNIT_NAME}
${o.attest ? `systemctl enable ${ATTEST_UNIT}` : '# no attestation agent'}
${
  o.enableDocker
    ? `for u in containerd.service docker.socket docker.service; do
  if [ -e "/lib/systemd/system/$u" ] || [ -e "/usr/lib/systemd/system/$u" ] || [ -e "/etc/systemd/system/$u" ]; then
    systemctl enable "$u"
  fi
done
systemctl is-enabled docker.service`
    : '# docker: skip'
}
${o.preload ? `systemctl enable ${PRELOAD_UNIT}` : '# no images to preload'}
if [ -e /lib/systemd/system/open-vm-tools.service ]; then
  systemctl enable open-vm-tools.service
fi
if [ -d /etc/cloud ]; then
  touch /etc/cloud/cloud-init.disabled
fi
`;
}

export interface CustomizeInput {
  work: string;
  debsDir: string | null;
  runner: { script: string; unit: string };
  manifest: object;
  enableDocker: boolean;
  /** docker-archive tars to load at first boot, before the runner (preload.ts) */
  preloadImages?: string[];
  /** the attestation agent (attest-agent.ts): guest-quote.sh and its unit */
  attest?: { script: string; unit: string };
  log?: (l: string) => void;
}

/** Seed files of the guest's random number generator (systemd's and sysvinit's). */
export const RANDOM_SEEDS = ['/var/lib/systemd/random-seed', '/var/lib/urandom/random-seed', '/var/lib/random-seed'];

/**
 * The install, inside the bake's open appliance (inspect.ts openGuest), then the session is closed
 * (unmounted and synced). The guestfish commands are those virt-customize ran for us before
 * (mkdir, copy-in, upload, chmod, the install script, delete, an empty machine-id), without its
 * second appliance boot and inspection.
 */
export async function customize(session: GuestSession, o: CustomizeInput): Promise<void> {
  const files = join(o.work, 'guest-files');
  mkdirSync(files, { recursive: true });
  writeFileSync(join(files, 'runner'), o.runner.script);
  writeFileSync(join(files, 'unit'), o.runner.unit);
  const preload = (o.preloadImages ?? []).map((f, i) => {
    const staged = join(files, `preload-${i + 1}.tar`);
    try {
      linkSync(f, staged);
    } catch {
      copyFileSync(f, staged);
    }
    return staged;
  });
  writeFileSync(
    join(files, 'install.sh'),
    guestInstallScript({ enableDocker: o.enableDocker, preload: preload.length > 0, attest: !!o.attest }),
  );
  if (o.attest) {
    writeFileSync(join(files, 'attest-script'), o.attest.script);
    writeFileSync(join(files, 'attest-unit'), o.attest.unit);
  }
  writeFileSync(join(files, 'preload-script'), preloadScript());
  writeFileSync(join(files, 'preload-unit'), preloadUnit());
  writeFileSync(join(files, 'manifest.json'), JSON.stringify(o.manifest, null, 2) + '\n');
  const w = fishWord;
  const put = (local: string, remote: string, mode: string) => [`upload ${w(local)} ${w(remote)}`, `chmod ${mode} ${w(remote)}`];
  o.log?.('bake: copying the runner, its unit and the packages into the guest');
  await session.run([
    `mkdir-p ${STAGING}`,
    ...(o.debsDir ? [`copy-in ${w(o.debsDir)} ${STAGING}`] : []),
    `upload ${w(join(files, 'install.sh'))} ${STAGING}/install.sh`,
    ...put(join(files, 'runner'), RUNNER_PATH, '0755'),
    ...put(join(files, 'unit'), `/etc/systemd/system/${UNIT_NAME}`, '0644'),
    ...(o.attest
      ? [
          'mkdir-p /usr/local/lib/povdesk',
          ...put(join(files, 'attest-script'), ATTEST_SCRIPT, '0755'),
          ...put(join(files, 'attest-unit'), `/etc/systemd/system/${ATTEST_UNIT}`, '0644'),
        ]
      : []),
    ...(preload.length
      ? [
          `mkdir-p ${PRELOAD_DIR}`,
          ...preload.flatMap((f, i) => [`upload ${w(f)} ${PRELOAD_DIR}/${String(i + 1).padStart(2, '0')}.tar`]),
          ...put(join(files, 'preload-script'), PRELOAD_SCRIPT, '0755'),
          ...put(join(files, 'preload-unit'), `/etc/systemd/system/${PRELOAD_UNIT}`, '0644'),
        ]
      : []),
  ]);
  o.log?.('bake: installing the packages and enabling the services (dpkg and systemctl in the guest)');
  // `sh` runs in the guest's root with /dev, /proc and /sys bound; its output comes back at the end.
  // The exit code is echoed, so a failure keeps the script's whole output for the error.
  const [installOut = ''] = await session.run([`sh ${w(`sh ${STAGING}/install.sh 2>&1; echo ${EXIT_MARK}$?`)}`]);
  const lines = installOut.split('\n').filter((l) => l.trim());
  const exit = lines.at(-1)?.startsWith(EXIT_MARK) ? Number(lines.pop()!.slice(EXIT_MARK.length)) : null;
  for (const l of lines) o.log?.(`guest: ${l}`);
  if (exit !== 0) {
    throw new AppError(
      'internal',
      `the guest's package install or service enablement failed (${exit === null ? 'no exit code' : `exit ${exit}`}); the lines ` +
        `below say which\n${lines.slice(-15).join('\n')}`,
    );
  }
  await session.run([
    'mkdir-p /etc/povdesk',
    `upload ${w(join(files, 'manifest.json'))} ${GUEST_MANIFEST}`,
    `rm-rf ${STAGING}`,
    // every VM made from the template gets its own machine id and random seed at first boot
    'write /etc/machine-id ""',
    ...RANDOM_SEEDS.map((f) => `rm-f ${f}`),
  ]);
  await session.close();
}
