import type { Db } from '../store/db';
import type { Environment, Template, Vm } from '../skytap/schemas';
import type { LabPlatform } from '../lab-platforms/platform';

/**
 * The part of SkytapClient the Skytap lab platform uses (lab-platforms/skytap.ts). SkytapClient
 * satisfies it; naming the subset keeps that module honest about what it calls.
 */
export interface SkytapApi {
  listTemplates(): Promise<Template[]>;
  listEnvironments(): Promise<Environment[]>;
  getEnvironment(id: string): Promise<Environment | null>;
  createEnvironment(req: { templateId: string; name: string }): Promise<Environment>;
  setRunstate(id: string, runstate: 'running' | 'suspended' | 'stopped' | 'halted'): Promise<Environment>;
  deleteEnvironment(id: string): Promise<'deleted' | 'already_gone'>;
  listVms(envId: string): Promise<Vm[]>;
  setVmUserData(envId: string, vmId: string, contents: string): Promise<void>;
}

/** What a lifecycle step needs from the job it runs in (JobContext minus the id). */
export interface StepContext {
  signal: AbortSignal;
  progress(step: string, fraction: number | null, message?: string): void;
  log(message: string, level?: 'info' | 'warn' | 'error'): void;
}

/**
 * Installs the control node after power-on (the control-node service). Whatever it
 * throws is recorded in control_node_status/control_node_reason and never fails the provision.
 * `not_set_up`: nothing was started because Settings lack what an install needs (the row says what).
 */
export type ControlNodeInstaller = (povId: string, ctx: StepContext) => Promise<void | 'not_set_up'>;

/**
 * Revokes the POV's control-node agent(s) as part of its destroy (the control-node service).
 * Whatever it throws is logged on the job and the row and never blocks the destroy.
 */
export type ControlNodeTeardown = (povId: string, ctx: StepContext) => Promise<void>;

/**
 * Unwires the POV from its BeyondTrust tenants as the first step of its destroy (the PAM
 * service; needs the agent still enrolled to stop the Gateway container). Whatever it throws is
 * logged on the job and never blocks the destroy.
 */
export type PamTeardown = (povId: string, ctx: StepContext) => Promise<void>;

/** What the POV lifecycle asks of the control-node domain (ControlNodeService is one). */
export interface PovControlNode {
  installAfterPowerOn: ControlNodeInstaller;
  teardown: ControlNodeTeardown;
}

/** What the POV lifecycle asks of the PAM domain (PamService is one). */
export interface PovPam {
  teardown: PamTeardown;
}

/** What the POVs ask of auto-delete: the Skytap schedule and its warning ladder (share/pov-schedule.ts). */
export interface PovAutoDelete {
  /** The auto-delete time of a new POV: the one asked for, checked, or the default (throws on a bad one); undefined for none. */
  at(asked: string | undefined): string | undefined;
  /**
   * Creates the environment's delete_at_end schedule right after the environment id is committed,
   * so even a provision that fails later is reaped. What it throws is logged on the job and never
   * fails the provision: the sweep flags "auto-delete not armed".
   */
  arm(povId: string, ctx: StepContext): Promise<void>;
  /** pov.setAutoDelete: moves the schedule, clamps share links, re-arms the ladder. */
  move(povId: string, at: string): Promise<void>;
  /** Runs in each reconcile pass with the environments read (schedules and share links). */
  sweep(envs: Environment[], ctx: StepContext): Promise<void>;
  /** The ladder's next and last warning for a POV's deletion time. */
  ladderView(povId: string, deleteAt: string): { nextWarning: { step: string; at: string } | null; lastWarning: string | null };
}

export interface LifecycleDeps {
  db: Db;
  /** A client built from the saved settings, with the provisioning retry budget. */
  skytap: (signal: AbortSignal) => Promise<SkytapApi>;
  /** The Local lab platform (the connected vm-manager): POVs whose platform is 'local' run on it. */
  local?: LabPlatform;
  now?: () => Date;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Poll interval while waiting on the platform (default 5 s). */
  pollMs?: number;
  /** Longest wait for one transition (default 30 min). */
  waitTimeoutMs?: number;
  /**
   * Called at each named step of create and destroy. Production leaves it unset; the crash
   * injection tests use it to SIGKILL the process at exactly that point.
   */
  checkpoint?: (step: string) => void;
  /** How long an unclear create is looked for by name (default CREATE_CHECK_MS, 30 min). */
  createCheckMs?: number;
  controlNode: PovControlNode;
  pam: PovPam;
  autoDelete: PovAutoDelete;
}

export const CREATE_STEPS = ['before-create', 'after-create', 'after-commit', 'after-wait', 'after-power-on', 'after-vms'] as const;
export const DESTROY_STEPS = ['before-delete', 'after-delete', 'after-gone'] as const;
