import type { JobRecord } from '../../../shared/contract';
import { JOB_KIND } from '../../../shared/contract/job-kinds';
import type { PovView } from '../../../shared/contract/pov';
import type { Hub } from '../hub';

/** Where `pov.updated` events go and what they follow (the app's stream hub). */
export type PovUpdatesHub = Pick<Hub, 'publish' | 'on'>;

/**
 * Publishes `pov.updated` for each POV whose view (row, running job, install job) differs from the
 * one last published, so the POV list follows changes instead of re-reading on a timer. Checked on
 * every change of a job about a POV (its row is written by that job), after each reconcile pass
 * (which writes every row), and on `pov.changed` (a service wrote a row outside a job). `decorate`
 * adds what pov.list adds (the readiness badge), so an event's POV is the list's row.
 */
export class PovUpdates {
  private readonly sent = new Map<string, string>();
  /** Checks run one after another, so an older view is never published after a newer one. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly hub: PovUpdatesHub,
    /** The views to compare: one POV (with its id), or every POV including destroyed ones. */
    private readonly read: (id?: string) => PovView[],
    private readonly decorate: (views: PovView[]) => Promise<PovView[]> = async (v) => v,
  ) {
    hub.on('job.changed', (job) => this.onJob(job));
    hub.on('pov.changed', ({ povId }) => void this.check(povId));
  }

  check(id?: string): Promise<void> {
    const views = this.read(id);
    this.queue = this.queue
      .then(() => this.decorate(views))
      .then((decorated) => {
        for (const v of decorated) {
          const json = JSON.stringify(v);
          if (this.sent.get(v.id) === json) continue;
          this.sent.set(v.id, json);
          this.hub.publish('pov.updated', v.id, v);
        }
      })
      .catch(() => undefined); // a failed badge read leaves the last event standing; the next change tries again
    return this.queue;
  }

  /** A job changed: its POV (when its subject is one), or every POV after a reconcile pass. */
  onJob(job: JobRecord): void {
    if (job.kind === JOB_KIND.reconcile) {
      if (job.state !== 'queued' && job.state !== 'running') void this.check();
    } else if (job.subject) void this.check(job.subject);
  }
}
