import type { Logger } from '../services/log/logger';
import type { JobRunner } from '../services/jobs/runner';
import type { SecretStore } from '../services/secrets/store';
import type { SettingsService } from '../services/settings/settings';
import type { Db } from '../services/store/db';
import type { StreamHub } from './streams';

/** What every domain's handlers are built from. */
export interface Base {
  home: string;
  env: NodeJS.ProcessEnv;
  /** 'app' runs background work (sweeps, timers); 'cli' and 'test' do not unless asked. */
  role: 'app' | 'cli' | 'test';
  db: Db;
  secrets: SecretStore;
  jobs: JobRunner;
  hub: StreamHub;
  log: Logger;
  settings: SettingsService;
  paths: { home: string; database: string; logs: string };
  /** Registers cleanup run by Core.close(), last registered first. */
  onClose(fn: () => void | Promise<void>): void;
}
