/** Pieces the vm suites share: a Base built from real parts, contract-checked calls, process checks. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import type { Base } from '../../main/core/base';
import { StreamHub } from '../../main/core/streams';
import { listProcs } from '../../main/lib/procs';
import { JobRunner } from '../../main/services/jobs/runner';
import { createLogger } from '../../main/services/log/logger';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { SettingsService } from '../../main/services/settings/settings';
import { openDatabase } from '../../main/services/store/db';
import { vmMethods } from '../../shared/contract/vm';
import { needs } from '../support/system';

export const VM_SYSTEM = ['qemu-system-x86_64', 'qemu-img', 'swtpm', 'tpm2_quote', '/bin/busybox', '/usr/share/OVMF/OVMF_CODE_4M.fd'];

export function vmSkip(): string | null {
  const r = needs(VM_SYSTEM);
  if (r) return r;
  const kernels = readdirSync('/boot').filter((f) => /^vmlinuz-.*-cloud-amd64$/.test(f));
  if (kernels.length === 0) {
    const reason = 'no /boot/vmlinuz-*-cloud-amd64 (apt-get install linux-image-cloud-amd64)';
    if (process.env.CI === 'true') throw new Error(reason);
    return reason;
  }
  return null;
}

export interface TestBase extends Base {
  close(): Promise<void>;
}

/** A Base like createCore's: real SQLite file, real job runner and stream hub, memory keychain. */
export function testBase(home = mkdtempSync(join(tmpdir(), 'povdesk-vm-'))): TestBase {
  const file = join(home, 'povdesk.sqlite');
  const db = openDatabase(file);
  const secrets = new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null });
  const log = createLogger({ dir: null, name: 'test' });
  const closers: (() => void | Promise<void>)[] = [];
  const jobs = new JobRunner(db);
  return {
    home,
    env: { ...process.env, POVDESK_HOME: home },
    role: 'test',
    db,
    secrets,
    jobs,
    hub: new StreamHub(),
    log,
    settings: new SettingsService(db, secrets, {}, log),
    paths: { home, database: file, logs: home },
    onClose: (fn) => closers.push(fn),
    async close() {
      for (const fn of closers.reverse()) await fn();
      await jobs.shutdown();
      db.close();
    },
  };
}

type VM = typeof vmMethods;
/** Calls a handler as the dispatcher does: args parsed by the contract, the result checked by it. */
export async function call<M extends keyof VM>(
  h: Record<string, (a: never, c: never) => unknown>,
  method: M,
  args: z.input<VM[M]['args']>,
): Promise<z.output<VM[M]['result']>> {
  const parsed = vmMethods[method].args.safeParse(args);
  if (!parsed.success) throw Object.assign(new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')), { code: 'invalid_request' });
  const result = await h[method]!(parsed.data as never, { transport: 'test' } as never);
  return vmMethods[method].result.parse(result) as z.output<VM[M]['result']>;
}

/** Pids of processes whose command line mentions `marker` (e.g. a state dir). */
export function processesWith(marker: string): number[] {
  return listProcs()
    .filter((p) => p.pid !== process.pid && p.argv.join(' ').includes(marker))
    .map((p) => p.pid);
}

export function removeHome(home: string) {
  rmSync(home, { recursive: true, force: true });
}
