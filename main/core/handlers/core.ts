import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../../shared/contract';
import { APP_VERSION } from '../../../shared/version';
import type { Base } from '../base';
import type { HandlerMap } from '../dispatch';

type CoreMethods =
  | 'app.info'
  | 'app.diagnostics'
  | 'settings.get'
  | 'settings.saveSkytap'
  | 'settings.clearSkytapToken'
  | 'jobs.list'
  | 'jobs.get'
  | 'jobs.cancel';

/** Extra sections for "Copy diagnostics" (the vm-manager adds its host report). */
export type DiagnosticsSection = () => Promise<[title: string, body: string]>;

function tail(file: string, lines: number): string {
  const text = readFileSync(file, 'utf8');
  return text.split('\n').slice(-lines - 1).join('\n');
}

export function coreHandlers(base: Base, extraDiagnostics: DiagnosticsSection[] = []): HandlerMap<CoreMethods> {
  const electron = (process.versions as Record<string, string | undefined>).electron ?? null;
  return {
    'app.info': () => ({
      version: APP_VERSION,
      platform: `${process.platform}-${process.arch}`,
      node: process.versions.node,
      electron,
      home: base.paths.home,
      logs: base.paths.logs,
    }),
    'app.diagnostics': async () => {
      const settings = await base.settings.view(base.paths);
      const sections: [string, string][] = [
        [
          'versions',
          `POV Desk ${APP_VERSION}\nnode ${process.versions.node}\nelectron ${electron ?? '(not running under Electron)'}\n` +
            `platform ${process.platform}-${process.arch}\nsqlite ${(base.db.prepare('select sqlite_version() v').get() as { v: string }).v}`,
        ],
        ['settings (no secrets)', JSON.stringify(settings, null, 2)],
      ];
      for (const extra of extraDiagnostics) {
        try {
          sections.push(await extra());
        } catch (err) {
          sections.push(['(section failed)', (err as Error).message]);
        }
      }
      if (existsSync(base.paths.logs)) {
        for (const f of readdirSync(base.paths.logs).filter((n) => n.endsWith('.log')).sort()) {
          sections.push([`log ${f} (last 200 lines)`, tail(join(base.paths.logs, f), 200)]);
        }
      }
      // Every secret the core knows (keychain and environment tokens, registered at start and on
      // each read or save), also in logs other processes wrote without knowing them.
      const text = sections.map(([t, b]) => `=== ${t}\n${b}`).join('\n\n');
      return { text: base.log.scrub(text) };
    },
    'settings.get': () => base.settings.view(base.paths),
    'settings.saveSkytap': async (args) => {
      if (args.apiToken !== undefined && /\s/.test(args.apiToken)) {
        throw new AppError('invalid_request', 'the API token contains white space; paste it again from your Skytap Account page');
      }
      await base.settings.saveSkytap(args);
      base.log.info('skytap settings saved', { username: args.username, tokenChanged: args.apiToken !== undefined });
      return base.settings.view(base.paths);
    },
    'settings.clearSkytapToken': async () => {
      await base.settings.clearSkytapToken();
      return base.settings.view(base.paths);
    },
    'jobs.list': (args) => ({ jobs: base.jobs.list(args) }),
    'jobs.get': (args) => {
      const job = base.jobs.get(args.id);
      if (!job) throw new AppError('not_found', `no job ${args.id}`);
      return { job, log: base.jobs.log(args.id) };
    },
    'jobs.cancel': (args) => {
      base.jobs.cancel(args.id);
      return { ok: true as const };
    },
  };
}
