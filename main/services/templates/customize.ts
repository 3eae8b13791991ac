/**
 * The bake itself, by virt-customize (libguestfs) with no guest network: the fetched .debs are
 * copied in and installed with dpkg, the runner and its unit (generated from the same marker
 * constants as the payload) are written and enabled, Docker is enabled at boot, cloud-init is
 * disabled, the build manifest goes to /etc/povdesk/, and the machine-id is emptied so every VM
 * made from the template gets its own.
 */
import { copyFileSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_PATH, UNIT_NAME } from '../control-node/runner';
import { PRELOAD_DIR, PRELOAD_SCRIPT, PRELOAD_UNIT, preloadScript, preloadUnit } from './preload';
import { runGuestfs } from './tools';

export const GUEST_MANIFEST = '/etc/povdesk/template-manifest.json';
const STAGING = '/var/cache/povdesk-bake';

/** Runs inside the guest (chroot in libguestfs's appliance). No network; dpkg only. */
export function guestInstallScript(o: { enableDocker: boolean; preload?: boolean }): string {
  return `#!/bin/sh
set -eu
export DEBIAN_FRONTEND=noninteractive
D=${STAGING}
if ls "$D"/debs/*.deb >/dev/null 2>&1; then
  # unsafe-io: no fsync per file (minutes under TCG); libguestfs syncs the disk when it closes
  dpkg --force-unsafe-io -i "$D"/debs/*.deb
fi
systemctl enable ${UNIT_NAME}
${o.enableDocker ? `for u in containerd.service docker.socket docker.service; do
  if [ -e "/lib/systemd/system/$u" ] || [ -e "/usr/lib/systemd/system/$u" ] || [ -e "/etc/systemd/system/$u" ]; then
    systemctl enable "$u"
  fi
done
systemctl is-enabled docker.service` : '# docker: skip'}
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
  disk: string;
  work: string;
  debsDir: string | null;
  runner: { script: string; unit: string };
  manifest: object;
  enableDocker: boolean;
  /** docker-archive tars to load at first boot, before the runner (preload.ts) */
  preloadImages?: string[];
  signal?: AbortSignal;
  log?: (l: string) => void;
}

export async function customize(o: CustomizeInput): Promise<void> {
  const files = join(o.work, 'guest-files');
  mkdirSync(files, { recursive: true });
  writeFileSync(join(files, 'runner'), o.runner.script);
  writeFileSync(join(files, 'unit'), o.runner.unit);
  // Staged under the work dir by plain names: virt-customize's FILE:DEST splits at a colon.
  const preload = (o.preloadImages ?? []).map((f, i) => {
    const staged = join(files, `preload-${i + 1}.tar`);
    try {
      linkSync(f, staged);
    } catch {
      copyFileSync(f, staged);
    }
    return staged;
  });
  writeFileSync(join(files, 'install.sh'), guestInstallScript({ enableDocker: o.enableDocker, preload: preload.length > 0 }));
  writeFileSync(join(files, 'preload-script'), preloadScript());
  writeFileSync(join(files, 'preload-unit'), preloadUnit());
  writeFileSync(join(files, 'manifest.json'), JSON.stringify(o.manifest, null, 2) + '\n');
  const args = [
    '-a', o.disk, '--no-network',
    '--mkdir', STAGING,
    ...(o.debsDir ? ['--copy-in', `${o.debsDir}:${STAGING}`] : []),
    '--upload', `${join(files, 'install.sh')}:${STAGING}/install.sh`,
    '--upload', `${join(files, 'runner')}:${RUNNER_PATH}`,
    '--chmod', `0755:${RUNNER_PATH}`,
    '--upload', `${join(files, 'unit')}:/etc/systemd/system/${UNIT_NAME}`,
    '--chmod', `0644:/etc/systemd/system/${UNIT_NAME}`,
    ...(preload.length
      ? [
        '--mkdir', PRELOAD_DIR,
        ...preload.flatMap((f, i) => ['--upload', `${f}:${PRELOAD_DIR}/${String(i + 1).padStart(2, '0')}.tar`]),
        '--upload', `${join(files, 'preload-script')}:${PRELOAD_SCRIPT}`,
        '--chmod', `0755:${PRELOAD_SCRIPT}`,
        '--upload', `${join(files, 'preload-unit')}:/etc/systemd/system/${PRELOAD_UNIT}`,
        '--chmod', `0644:/etc/systemd/system/${PRELOAD_UNIT}`,
      ]
      : []),
    '--run-command', `sh ${STAGING}/install.sh`,
    '--mkdir', '/etc/povdesk',
    '--upload', `${join(files, 'manifest.json')}:${GUEST_MANIFEST}`,
    '--delete', STAGING,
    '--truncate', '/etc/machine-id',
  ];
  await runGuestfs('virt-customize', args, {
    signal: o.signal, onLine: o.log, what: 'virt-customize',
    hint: 'the guest\'s package install or service enablement failed; the lines below say which',
  });
}
