import type { ARTIFACT_STATES } from '../../../shared/contract/pam';

export type ArtifactState = (typeof ARTIFACT_STATES)[number];

/** What a wiring step needs from the job it runs in (JobContext minus the id). */
export interface PamJob {
  signal: AbortSignal;
  progress(step: string, fraction: number | null, message?: string): void;
  log(message: string, level?: 'info' | 'warn' | 'error'): void;
}

/** Waits, honouring a cancel; tests pass a quick one. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A POV's tag in every tenant: the Jumpoint's and Jump Group's code_name, the workgroup name, the jump items' tag. */
export function povTag(povId: string): string {
  return `pov_${povId}`.slice(0, 64);
}
