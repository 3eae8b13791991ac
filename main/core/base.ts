import type { ControlNodeService } from '../services/control-node/service';
import type { Logger } from '../services/log/logger';
import type { Ladder } from '../services/notify/ladder';
import type { NotificationService } from '../services/notify/service';
import type { PamService } from '../services/pam/service';
import type { ReadinessService } from '../services/pov/readiness';
import type { DoctorService } from '../services/doctor/service';
import type { PovService } from '../services/pov/service';
import type { AutoDelete } from '../services/share/auto-delete';
import type { ShareService } from '../services/share/service';
import type { SavedSkytap } from '../services/skytap/saved';
import type { SessionManager } from '../services/ssh/manager';
import type { Terminals } from '../services/ssh/terminals';
import type { BakeService } from '../services/bake/service';
import type { LocalLabTemplates } from '../services/lab-platforms/local-lab-templates';
import type { LabTemplateService } from '../services/lab-platforms/lab-templates';
import type { ConnectedVmManager } from '../services/vm/service';
import type { JobRunner } from '../services/jobs/runner';
import type { SecretStore } from '../services/secrets/store';
import type { SettingsService } from '../services/settings/settings';
import type { Db } from '../services/store/db';
import type { StreamHub } from './streams';

/** The shared infrastructure every domain service is built from. */
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

/** Every domain service, built once by createCore in dependency order. */
export interface Services {
  skytap: SavedSkytap;
  notify: NotificationService;
  shares: ShareService;
  autoDelete: AutoDelete;
  ladder: Ladder;
  pam: PamService;
  controlNode: ControlNodeService;
  pov: PovService;
  readiness: ReadinessService;
  vm: ConnectedVmManager;
  ssh: SessionManager;
  terminals: Terminals;
  bake: BakeService;
  localLabTemplates: LocalLabTemplates;
  labTemplates: LabTemplateService;
  doctor: DoctorService;
}
