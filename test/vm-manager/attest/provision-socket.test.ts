/**
 * Issue 33 item 6: while the manager makes a VM's AK, the swtpm must not be reachable by other
 * local users, and the provisioning must talk to the swtpm it started, not to whatever answers.
 * Before, swtpm listened on a loopback TCP port pair and the wait loop took any listener there.
 * Now it listens on a unix socket in a fresh 0700 directory. Checked from /proc while the AK is
 * being made: the TCTI names that socket, the directory is ours and 0700, and the swtpm holds no
 * TCP listening socket at all.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionAk, withSwtpm } from '../../../main/vm-manager/attest/provision';
import { pidsWith } from '../../support/manager';
import { needs } from '../../support/system';
import { cleanup, tempDir } from './harness';

const skip = needs(['swtpm', 'tpm2_createak', 'tpm2_evictcontrol', 'tpm2_readpublic']);

/** Inodes of the TCP sockets in LISTEN state (state 0A), v4 and v6. */
function tcpListeners(): Set<string> {
  const out = new Set<string>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && cols[9]) out.add(cols[9]);
    }
  }
  return out;
}

/** Socket inodes a process holds open. */
function socketInodes(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      return m ? [m[1]!] : [];
    } catch {
      return [];
    }
  });
}

describe.skipIf(skip !== null)('AK provisioning reaches only the swtpm it started', () => {
  let root: string;
  beforeAll(() => {
    root = tempDir('provsock');
  });
  afterAll(() => cleanup(root));

  it('the swtpm listens on a unix socket in a 0700 directory of ours, with no TCP listener', async () => {
    const state = `${root}/tpm-state`;
    mkdirSync(state);
    const seen = await withSwtpm(state, async (tcti) => {
      const swtpm = pidsWith(`dir=${state}`);
      const listeners = tcpListeners();
      const tcp = swtpm.flatMap((pid) => socketInodes(pid).filter((i) => listeners.has(i)));
      const path = /^swtpm:path=(.+)$/.exec(tcti)?.[1] ?? null;
      const dir = path ? statSync(dirname(path)) : null;
      const ak = await provisionAk(tcti);
      return { tcti, swtpm, tcp, dirMode: dir ? dir.mode & 0o777 : null, dirUid: dir?.uid ?? null, ak };
    });
    expect(seen.swtpm).toHaveLength(1);
    expect(seen.tcti).toMatch(/^swtpm:path=\//);
    expect(seen.tcp).toEqual([]);
    expect(seen.dirMode).toBe(0o700);
    expect(seen.dirUid).toBe(process.getuid!());
    expect(seen.ak.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    // the swtpm and its socket directory are gone afterwards
    expect(pidsWith(`dir=${state}`)).toEqual([]);
    const path = /^swtpm:path=(.+)$/.exec(seen.tcti)![1]!;
    expect(() => statSync(dirname(path))).toThrow();
  });
});
