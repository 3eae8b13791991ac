import type { OsValue } from '../../../shared/contract/pov';
import type { LabPlatformId } from '../../../shared/lab-platforms';
import type { LocalTemplate } from './local-lab-templates';

export type { LocalTemplate, LocalTemplateVm } from './local-lab-templates';

/**
 * A lab platform: where a POV's environment lives. Two implement it: Skytap (skytap.ts, the
 * Skytap client behind this interface) and Local (local.ts, whichever vm-manager the app is
 * connected to). What each can do is declared in shared/lab-platforms.ts; callers refuse what a platform
 * lacks before they get here. The one POV lifecycle (pov/lifecycle.ts, pov/destroy.ts) runs over
 * it for both. docs/lab-platforms.md describes both.
 *
 * Kept to what the POV lifecycle, the reconcile sweep, the control-node install and the VMs tab
 * read: create from a template, read, power, delete, the control node's user_data, and the
 * environments whose name carries a tag (crash recovery).
 */
export type PlatformId = LabPlatformId;

export interface LabVm {
  id: string;
  name: string;
  os: OsValue;
  /** The platform's own OS words (Skytap's hardware.guestOS), when it has any. */
  guestOs: string | null;
  /** What the platform reports; may be null (no lease yet, or none reported). */
  ip: string | null;
  hostname: string | null;
  runstate: string | null;
  /**
   * The network the VM is reached on, from its interfaces (Skytap: an automatic one when it has
   * any, since that is where the metadata service answers); absent or null when not reported.
   */
  network?: { id: string | null; name: string | null; type: 'automatic' | 'manual' | null } | null;
  /** Published services (Skytap's NAT of a guest port to a public host:port); display only. */
  published?: PublishedPort[];
}

/** One published service: what the VMs tab shows; the wiring keeps using private addresses. */
export interface PublishedPort {
  internalPort: number;
  externalHost: string;
  externalPort: number;
}

export interface LabEnvironment {
  id: string;
  name: string;
  /** 'running' | 'suspended' | 'stopped' | 'busy' | … (Skytap's words; Local maps its VM states onto them). */
  runstate: string;
  vms: LabVm[];
  /**
   * The platform has queued the last operation itself and retries it (Skytap's rate_limited):
   * the lifecycle then polls and never re-submits. Absent means false.
   */
  rateLimited?: boolean;
  /**
   * Nothing is left but what the platform removes with the environment (Local: its network, after
   * its last VM): a destroy still runs its delete; the sweep takes it for deleted outside POV Desk
   * and removes the rest. Absent means false.
   */
  remnant?: boolean;
}

export interface LabPlatform {
  readonly id: PlatformId;
  /** The template's name, or null when this platform (account, vm-manager) has no such template. */
  templateName(templateId: string): Promise<string | null>;
  /**
   * The environment id a POV's tag gives, when the platform lets the app name it before anything
   * is created (Local: committed before the first VM exists); null when the platform assigns it
   * on create (Skytap: the POST's answer).
   */
  envIdFor(tag: string): string | null;
  /**
   * Creates the environment from a template. Local: every VM the template names, each skipped
   * when a VM of that name already exists (a re-run after a crash completes, never duplicates).
   * `step` is called before and after each mutating call (crash-injection tests hang off it).
   * `internet`: Local only, the POV's Internet access, applied to its network before any VM starts.
   */
  create(
    req: { envId: string | null; templateId: string; name: string; internet?: boolean },
    step?: (name: string) => void,
  ): Promise<LabEnvironment>;
  /**
   * The environment with its VMs, or null once it is gone. `{vms: false}` is a poll that needs
   * only the runstate: Skytap then reads the environment alone (its vms are what that GET carried).
   */
  get(envId: string, opts?: { vms?: boolean }): Promise<LabEnvironment | null>;
  /** The environment's VMs alone (Skytap: one VM-list read). */
  vms(envId: string): Promise<LabVm[]>;
  /**
   * Asks for the power state; the caller polls get() until runstate is `poweredRunstate(target)`.
   * Answers with the environment when the platform's answer carries it (Skytap), else null.
   */
  power(envId: string, target: 'running' | 'suspended'): Promise<LabEnvironment | null>;
  /** The runstate get() reports once a power request reached its target. */
  poweredRunstate(target: 'running' | 'suspended'): string;
  /** Asks for the delete (already gone is fine); complete only once get() answers null. */
  delete(envId: string, step?: (name: string) => void): Promise<'deleted' | 'already_gone'>;
  /** The control node's user_data: what the guest reads at /skytap/vms/self/user_data; null clears it. */
  setUserData(envId: string, vmId: string, contents: string | null, signal?: AbortSignal): Promise<void>;
  /**
   * Environments whose name carries a POV's tag (every POV's tag when none is given): what an
   * interrupted create may have left, found by name as the Skytap path does.
   */
  findByTag(tag?: string): Promise<{ id: string; name: string }[]>;
  /**
   * The environment with exactly this name, or null: how a create whose answer was lost is found
   * (Skytap: the POST's name carries the POV's tag; one listing, as the create always looked).
   */
  findByName(name: string): Promise<LabEnvironment | null>;
  /** Local only: every (stopped) VM's disk, vTPM state and firmware variables saved / put back. */
  saveClean?(envId: string): Promise<void>;
  /** Says per VM whether it resumed from its saved memory, or why it boots the saved disks instead. */
  resetClean?(envId: string): Promise<VmResetOutcome[]>;
  /** Local only: the environment's Internet access (each VM follows it from its next start). */
  setInternet?(envId: string, on: boolean): Promise<void>;
}

/** How one VM came back from a reset to the clean state; `note` says why a VM did not resume (null: it did). */
export interface VmResetOutcome {
  vm: string;
  resumed: boolean;
  note: string | null;
}

/** What the Local platform needs of the templates store. */
export interface TemplateSource {
  get(id: string): LocalTemplate | null;
}

/** The tag of a POV in names on its platform: the first 8 characters of its id. */
export function povTag(povId: string): string {
  return povId.slice(0, 8).toLowerCase();
}
