/** What wiring a POV into its tenants (./wire) works on: the POV, its VMs, the tenants' clients; its step helpers' types. */
import type { AgentTasks } from './agent-tasks';
import type { EntitleClient } from './entitle';
import type { PasswordSafeClient } from './password-safe';
import type { PraClient } from './pra';
import type { PamRepo } from './repo';
import type { Sleep } from './types';

export interface PamVm {
  vmId: string;
  name: string;
  os: 'linux' | 'windows' | 'unknown';
  ip: string | null;
  /** What the platform reports (absent in tests that do not care): the broker host's check reads them. */
  guestOs?: string | null;
  networkType?: 'automatic' | 'manual' | null;
  networkId?: string | null;
  networkName?: string | null;
}

export interface PamPov {
  id: string;
  name: string;
  /** The enrolled control node's agent, or null (the Gateway container then waits). */
  agentId: string | null;
  /** The VM named as the Resource Broker host (pov.setRoleHosts), if any. */
  brokerHost: string | null;
  /** The control node's VM (the broker host must share its network); null when none is resolved. */
  controlNodeVmId?: string | null;
  vms: PamVm[];
}

export interface WireSettings {
  gatewayImage: string;
  gatewayArgs: string[];
  connectTimeoutMs: number;
  connectPollMs: number;
}

export interface WireDeps {
  repo: PamRepo;
  pov: PamPov;
  pra: PraClient | null;
  ps: PasswordSafeClient | null;
  entitle: EntitleClient | null;
  agent: AgentTasks | null;
  brokerInstallKey: string | null;
  functionalAccounts: { linux?: { accountName: string; password?: string }; windows?: { accountName: string; password?: string } };
  managedAccounts: { linux: string[]; windows: string[] };
  settings: WireSettings;
  sleep: Sleep;
  /** Crash-injection tests throw here; production leaves it unset. */
  checkpoint?: (step: string) => void;
}

export interface WireResult {
  problems: string[];
  jumpItems: number;
  assets: number;
  connected: boolean;
}

/** Runs one step; its failure is recorded on the artifact and in the job, never thrown (but cancel is). */
export type Step = (kind: Parameters<PamRepo['mark']>[1], key: string, what: string, fn: () => Promise<void>) => Promise<void>;
/** Records the state of one artifact (PamRepo.mark for this POV). */
export type Mark = (kind: Parameters<PamRepo['mark']>[1], key: string, patch: Parameters<PamRepo['mark']>[3]) => void;
