import { AppError } from '../../../shared/contract/errors';
import type { JobContext, JobRunner } from '../jobs/runner';
import { JOB_KIND, type JobKind } from '../../../shared/contract/job-kinds';

/**
 * Which job holds each POV: at most one lifecycle job (create, start, suspend, destroy, refresh)
 * and at most one control-node install per POV in this process. Shared by the PovService and the
 * control-node service, so each gates on the other's jobs without holding the other.
 */
export class PovLocks {
  private readonly active = new Map<string, string>();
  private readonly installs = new Map<string, string>();

  constructor(private readonly jobs: JobRunner) {}

  activeJob(povId: string): string | null {
    return this.active.get(povId) ?? null;
  }

  /** The control-node install job running for this POV, if any. */
  installJob(povId: string): string | null {
    return this.installs.get(povId) ?? null;
  }

  /**
   * Starts a lifecycle job for a POV and holds the POV until it settles. The entry is cleared
   * inside the work itself, so a caller that awaits the job sees the POV free.
   */
  launch<T>(kind: JobKind, title: string, povId: string, work: (ctx: JobContext) => Promise<T>): string {
    return this.hold(this.active, { kind, title, subject: povId }, work);
  }

  /**
   * Starts a POV's control-node install job (kind pov.installControlNode) and tracks it, so that
   * Suspend is refused and Destroy cancels it first. One install per POV at a time. The provision
   * calls this from inside its own (still active) job, so the lifecycle lock is not checked here.
   */
  startInstall<T>(povId: string, title: string, work: (ctx: JobContext) => Promise<T>): string {
    const running = this.installs.get(povId);
    if (running) {
      throw new AppError(
        'conflict',
        `A control-node install is already running for this POV (job ${running}); wait for it or cancel it in Jobs.`,
      );
    }
    return this.hold(this.installs, { kind: JOB_KIND.controlNodeInstall, title, subject: povId }, work);
  }

  private hold<T>(
    map: Map<string, string>,
    spec: { kind: JobKind; title: string; subject: string },
    work: (ctx: JobContext) => Promise<T>,
  ): string {
    const povId = spec.subject;
    let jobId = '';
    const release = () => {
      if (map.get(povId) === jobId) map.delete(povId);
    };
    jobId = this.jobs.start<T>(spec, async (ctx) => {
      try {
        return await work(ctx);
      } finally {
        release();
      }
    });
    map.set(povId, jobId);
    // A job cancelled while still queued never runs its work: release it when it settles too.
    void this.jobs.wait(jobId).then(release, release);
    return jobId;
  }
}
