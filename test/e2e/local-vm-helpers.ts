import { existsSync } from 'node:fs';

export { stopManager } from '../support/manager';

const HOST_TOOLS = ['/usr/bin/qemu-system-x86_64', '/usr/bin/swtpm', '/usr/share/OVMF/OVMF_CODE_4M.fd', '/bin/busybox'];
/** What the local-VM specs need on the host; under CI=true a missing piece fails them instead. */
export const missingHostTools = HOST_TOOLS.filter((p) => !existsSync(p));
