import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP_VERSION } from '../../shared/version';
import type { ConnectedVmManager } from '../services/vm/service';
import type { Base } from './base';

/** Extra sections for "Copy diagnostics" (the vm-manager adds its host report). */
export type DiagnosticsSection = () => Promise<[title: string, body: string]>;

function tail(file: string, lines: number): string {
  const text = readFileSync(file, 'utf8');
  return text
    .split('\n')
    .slice(-lines - 1)
    .join('\n');
}

/** "Copy diagnostics": versions, settings (no secrets), the extra sections and each log's tail, scrubbed. */
export async function diagnostics(base: Base, extra: DiagnosticsSection[]): Promise<string> {
  const electron = (process.versions as Record<string, string | undefined>).electron ?? null;
  const settings = await base.settings.view(base.paths);
  const sections: [string, string][] = [
    [
      'versions',
      `POV Desk ${APP_VERSION}\nnode ${process.versions.node}\nelectron ${electron ?? '(not running under Electron)'}\n` +
        `platform ${process.platform}-${process.arch}\nsqlite ${(base.db.prepare('select sqlite_version() v').get() as { v: string }).v}`,
    ],
    ['settings (no secrets)', JSON.stringify(settings, null, 2)],
  ];
  for (const section of extra) {
    try {
      sections.push(await section());
    } catch (err) {
      sections.push(['(section failed)', (err as Error).message]);
    }
  }
  if (existsSync(base.paths.logs)) {
    for (const f of readdirSync(base.paths.logs)
      .filter((n) => n.endsWith('.log'))
      .sort()) {
      sections.push([`log ${f} (last 200 lines)`, tail(join(base.paths.logs, f), 200)]);
    }
  }
  // Every secret the core knows (keychain and environment tokens, registered at start and on
  // each read or save), also in logs other processes wrote without knowing them.
  const text = sections.map(([t, b]) => `=== ${t}\n${b}`).join('\n\n');
  return base.log.scrub(text);
}

/** "Copy diagnostics" section: the vm-manager's host report (or why there is none). */
export function vmDiagnostics(vm: ConnectedVmManager): DiagnosticsSection {
  return async () => {
    try {
      const h = await vm.host();
      const lines = [
        `endpoint ${h.endpoint} (${h.mode})`,
        `host ${h.hostname}, kernel ${h.kernel}, ${h.cpus} CPUs, ${Math.round(h.memoryBytes / 1024 ** 2)} MiB`,
        `accelerator ${h.accelerator.chosen ?? 'none'}: ${h.accelerator.reason}`,
        ...(h.accelerator.warning ? [`warning: ${h.accelerator.warning}`] : []),
        ...h.accelerator.probes.map((p) => `probe ${p.accel}: ${p.result} (${p.detail})`),
        ...h.tools.map((t) => `${t.name}: ${t.found ? (t.version ?? 'found') : `missing (${t.error ?? ''})`}`),
        `OVMF ${h.ovmfCode ?? 'missing'}; guest kernel ${h.guestKernel ?? 'missing'}`,
        `ready ${h.ready}`,
        ...h.missing.map((m) => `missing ${m.what}: ${m.install}`),
      ];
      return ['vm-manager host report', lines.join('\n')];
    } catch (e) {
      return ['vm-manager host report', `unavailable: ${(e as Error).message}`];
    }
  };
}
