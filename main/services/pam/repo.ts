import type { Db } from '../store/db';
import type { ArtifactState } from './types';

/** The pam_* tables (migration 007). Every call is its own commit, so a crash loses nothing written. */
export interface TenantRow {
  pov_id: string;
  pra_site: string | null;
  pra_client_id: string | null;
  ps_url: string | null;
  ps_run_as: string | null;
  ps_client_id: string | null;
  entitle_url: string | null;
  fa_linux: string | null;
  fa_windows: string | null;
  managed_linux: string;
  managed_windows: string;
  updated_at: string;
}

export interface ArtifactRow {
  pov_id: string;
  kind: ArtifactKind;
  key: string;
  remote_id: string | null;
  state: ArtifactState;
  detail: string | null;
  error: string | null;
  updated_at: string;
}

export type ArtifactKind =
  | 'jump_group'
  | 'jumpoint'
  | 'container'
  | 'jump_item'
  | 'workgroup'
  | 'functional_account'
  | 'asset'
  | 'managed_system'
  | 'managed_account'
  | 'entitle_resource'
  | 'broker';

export class PamRepo {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private at() {
    return this.now().toISOString();
  }

  tenants(povId: string): TenantRow | null {
    return (this.db.prepare('SELECT * FROM pam_tenants WHERE pov_id = ?').get(povId) as TenantRow | undefined) ?? null;
  }

  saveTenants(povId: string, patch: Partial<Omit<TenantRow, 'pov_id' | 'updated_at'>>): void {
    const cols = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    const at = this.at();
    this.db.transaction(() => {
      this.db.prepare('INSERT OR IGNORE INTO pam_tenants (pov_id, updated_at) VALUES (?, ?)').run(povId, at);
      const sets = [...cols.map((c) => `${c} = @${c}`), 'updated_at = @updated_at'];
      this.db.prepare(`UPDATE pam_tenants SET ${sets.join(', ')} WHERE pov_id = @pov_id`).run({ ...patch, updated_at: at, pov_id: povId });
    })();
  }

  artifact(povId: string, kind: ArtifactKind, key = ''): ArtifactRow | null {
    return (
      (this.db.prepare('SELECT * FROM pam_artifacts WHERE pov_id = ? AND kind = ? AND key = ?').get(povId, kind, key) as
        ArtifactRow | undefined) ?? null
    );
  }

  artifacts(povId: string, kind?: ArtifactKind): ArtifactRow[] {
    return kind
      ? (this.db.prepare('SELECT * FROM pam_artifacts WHERE pov_id = ? AND kind = ? ORDER BY key').all(povId, kind) as ArtifactRow[])
      : (this.db.prepare('SELECT * FROM pam_artifacts WHERE pov_id = ? ORDER BY kind, key').all(povId) as ArtifactRow[]);
  }

  /** Upserts one artifact; fields left undefined keep their value (null clears). */
  mark(
    povId: string,
    kind: ArtifactKind,
    key: string,
    patch: { remote_id?: string | null; state: ArtifactState; detail?: string | null; error?: string | null },
  ): void {
    const at = this.at();
    const prev = this.artifact(povId, kind, key);
    const row = {
      pov_id: povId,
      kind,
      key,
      remote_id: patch.remote_id !== undefined ? patch.remote_id : (prev?.remote_id ?? null),
      state: patch.state,
      detail: patch.detail !== undefined ? patch.detail : (prev?.detail ?? null),
      error: patch.error !== undefined ? patch.error : patch.state === 'failed' ? (prev?.error ?? null) : null,
      updated_at: at,
    };
    this.db
      .prepare(
        `INSERT INTO pam_artifacts (pov_id, kind, key, remote_id, state, detail, error, updated_at)
         VALUES (@pov_id, @kind, @key, @remote_id, @state, @detail, @error, @updated_at)
         ON CONFLICT(pov_id, kind, key) DO UPDATE SET remote_id = excluded.remote_id, state = excluded.state,
           detail = excluded.detail, error = excluded.error, updated_at = excluded.updated_at`,
      )
      .run(row);
  }

  forget(povId: string, kind: ArtifactKind, key = ''): void {
    this.db.prepare('DELETE FROM pam_artifacts WHERE pov_id = ? AND kind = ? AND key = ?').run(povId, kind, key);
  }

  run(povId: string): { op: 'wire' | 'unwire'; state: string; job_id: string | null; at: string } | null {
    return (
      (this.db.prepare('SELECT op, state, job_id, at FROM pam_runs WHERE pov_id = ?').get(povId) as
        { op: 'wire' | 'unwire'; state: string; job_id: string | null; at: string } | undefined) ?? null
    );
  }

  setRun(povId: string, op: 'wire' | 'unwire', state: 'running' | 'succeeded' | 'failed' | 'cancelled', jobId: string | null): void {
    this.db
      .prepare(
        `INSERT INTO pam_runs (pov_id, op, state, job_id, at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(pov_id) DO UPDATE SET op = excluded.op, state = excluded.state, job_id = excluded.job_id, at = excluded.at`,
      )
      .run(povId, op, state, jobId, this.at());
  }

  /** Runs a previous process left 'running' (a crash): what start-up resumes. */
  interrupted(): { pov_id: string; op: 'wire' | 'unwire' }[] {
    return this.db.prepare("SELECT pov_id, op FROM pam_runs WHERE state = 'running'").all() as { pov_id: string; op: 'wire' | 'unwire' }[];
  }
}
