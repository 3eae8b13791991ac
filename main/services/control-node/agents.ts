import type { Db } from '../store/db';

export type AgentRowState = 'minted' | 'injected' | 'enrolled' | 'expired' | 'revoked' | 'failed';

export interface AgentRow {
  agent_id: string;
  pov_id: string;
  env_id: string;
  vm_id: string;
  state: AgentRowState;
  attestation: 'spire' | 'ed25519' | null;
  tier: 1 | 2 | 3 | null;
  chars: number | null;
  expires_at: string;
  created_at: string;
  injected_at: string | null;
  enrolled_at: string | null;
  cleared_at: string | null;
  revoked_at: string | null;
  reason: string | null;
}

/** The control_node_agents table (migration 003). Each call is its own commit. */
export class AgentStore {
  constructor(private readonly db: Db) {}

  insert(row: Pick<AgentRow, 'agent_id' | 'pov_id' | 'env_id' | 'vm_id' | 'expires_at' | 'created_at'>): void {
    this.db
      .prepare(
        `INSERT INTO control_node_agents (agent_id, pov_id, env_id, vm_id, state, expires_at, created_at)
         VALUES (@agent_id, @pov_id, @env_id, @vm_id, 'minted', @expires_at, @created_at)`,
      )
      .run(row);
  }

  update(agentId: string, patch: Partial<Omit<AgentRow, 'agent_id' | 'pov_id' | 'created_at'>>): void {
    const cols = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    if (!cols.length) return;
    this.db
      .prepare(`UPDATE control_node_agents SET ${cols.map((c) => `${c} = @${c}`).join(', ')} WHERE agent_id = @agent_id`)
      .run({ ...patch, agent_id: agentId });
  }

  get(agentId: string): AgentRow | null {
    return (this.db.prepare('SELECT * FROM control_node_agents WHERE agent_id = ?').get(agentId) as AgentRow | undefined) ?? null;
  }

  /** Agents of a POV not yet revoked, newest first. */
  live(povId: string): AgentRow[] {
    return this.db
      .prepare("SELECT * FROM control_node_agents WHERE pov_id = ? AND state <> 'revoked' ORDER BY created_at DESC, rowid DESC")
      .all(povId) as AgentRow[];
  }

  latest(povId: string): AgentRow | null {
    return (
      (this.db.prepare('SELECT * FROM control_node_agents WHERE pov_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1').get(povId) as
        AgentRow | undefined) ?? null
    );
  }
}
