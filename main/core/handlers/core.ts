import { AppError } from '../../../shared/contract';
import { APP_VERSION } from '../../../shared/version';
import type { Base } from '../base';
import { diagnostics, type DiagnosticsSection } from '../diagnostics';
import type { HandlerMap } from '../dispatch';

type CoreMethods =
  | 'app.info'
  | 'app.diagnostics'
  | 'settings.get'
  | 'settings.saveSkytap'
  | 'settings.clearSkytapToken'
  | 'settings.removeSkytap'
  | 'jobs.list'
  | 'jobs.get'
  | 'jobs.cancel';

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
    'app.diagnostics': async () => ({ text: await diagnostics(base, extraDiagnostics) }),
    'settings.get': () => base.settings.view(base.paths),
    'settings.saveSkytap': async (args) => {
      await base.settings.saveSkytap(args);
      base.log.info('skytap settings saved', { username: args.username, tokenChanged: args.apiToken !== undefined });
      return base.settings.view(base.paths);
    },
    'settings.clearSkytapToken': async () => {
      await base.settings.clearSkytapToken();
      return base.settings.view(base.paths);
    },
    'settings.removeSkytap': async () => {
      await base.settings.removeSkytap();
      base.log.info('skytap account removed');
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
