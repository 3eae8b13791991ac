/**
 * Every kind of job, one closed list (no zod here: the renderer imports the lists; the schema is
 * `jobKind` in core.ts). A job's kind is the name of the contract method that starts
 * it (the ten-minute sweep runs as `reconcile.runNow`, the install after a POV's power-on as
 * `pov.installControlNode`). Migration 9 renamed the spellings stored before this list existed.
 */
export const JOB_KIND = {
  povCreate: 'pov.create',
  povStart: 'pov.start',
  povSuspend: 'pov.suspend',
  povDestroy: 'pov.destroy',
  povRefreshVms: 'pov.refreshVms',
  povSnapshot: 'pov.snapshot',
  povReset: 'pov.reset',
  reconcile: 'reconcile.runNow',
  controlNodeInstall: 'pov.installControlNode',
  pamWire: 'pam.wire',
  pamUnwire: 'pam.unwire',
  vmCreate: 'vm.create',
  vmImageBuildTest: 'vm.imageBuildTest',
  vmLearnGolden: 'vm.learnGolden',
  vmLogin: 'vm.login',
  bakeStart: 'bake.start',
  bakeExport: 'bake.export',
  sshTypeInto: 'ssh.typeInto',
} as const;

export type JobKind = (typeof JOB_KIND)[keyof typeof JOB_KIND];
export const JOB_KINDS: readonly JobKind[] = Object.values(JOB_KIND);

/** Jobs that change a POV's lifecycle state; the latest settled one shows in its row's Status. */
export const POV_LIFECYCLE_JOB_KINDS: readonly JobKind[] = [
  JOB_KIND.povCreate,
  JOB_KIND.povStart,
  JOB_KIND.povSuspend,
  JOB_KIND.povDestroy,
  JOB_KIND.povRefreshVms,
  JOB_KIND.povSnapshot,
  JOB_KIND.povReset,
  JOB_KIND.reconcile,
];

/** Jobs of the Local VMs page. */
export const VM_JOB_KINDS: readonly JobKind[] = [JOB_KIND.vmCreate, JOB_KIND.vmImageBuildTest, JOB_KIND.vmLearnGolden];

/** The spellings stored before the closed list (migration 9 rewrites them). */
export const LEGACY_JOB_KINDS: Readonly<Record<string, JobKind>> = {
  pov_create: JOB_KIND.povCreate,
  pov_start: JOB_KIND.povStart,
  pov_suspend: JOB_KIND.povSuspend,
  pov_destroy: JOB_KIND.povDestroy,
  pov_refresh_vms: JOB_KIND.povRefreshVms,
  pov_env_reconcile: JOB_KIND.reconcile,
  'control-node.install': JOB_KIND.controlNodeInstall,
};
