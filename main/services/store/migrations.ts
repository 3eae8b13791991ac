import core from './migrations/001-core';
import pov from './migrations/002-pov';
import controlNode from './migrations/003-control-node';
import ssh from './migrations/004-ssh';
import controlNodePov from './migrations/005-control-node-pov';
import share from './migrations/006-share';
import pam from './migrations/007-pam';
import customerTz from './migrations/008-customer-tz';
import jobKinds from './migrations/009-job-kinds';
import sshAgent from './migrations/010-ssh-agent';
import povLocal from './migrations/011-pov-local';
import vmNetworks from './migrations/012-vm-networks';
import bakeJobKinds from './migrations/013-bake-job-kinds';
import povEnvName from './migrations/014-pov-env-name';
import type { Migration } from './migration';

export type { Migration } from './migration';

/** Every schema migration, one file per domain, numbered in the order they were written. */
export const migrations: readonly Migration[] = [
  core,
  pov,
  controlNode,
  ssh,
  controlNodePov,
  share,
  pam,
  customerTz,
  jobKinds,
  sshAgent,
  povLocal,
  vmNetworks,
  bakeJobKinds,
  povEnvName,
];
