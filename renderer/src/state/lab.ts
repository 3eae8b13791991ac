import type { JobRecord, SettingsView } from '../../../shared/contract';
import type { VmConnection } from '../../../shared/contract/vm';
import { PLATFORMS, type Feature, type LabPlatformId } from '../../../shared/lab-platforms';
import { api } from '../api';

/** The lab platforms a POV can live on (pov.create's `platform`; PovView.platform). */
export type { LabPlatformId };

/**
 * What the create dialog offers. "This laptop" and "Remote vm-manager" are both the `local`
 * platform: it drives whichever vm-manager the app is connected to (vm.connection), so exactly one
 * of the two is offered, by the connection's mode.
 */
export interface PlatformChoice {
  platform: LabPlatformId;
  label: string;
  /** One line under the choice: where the VMs run. */
  detail: string;
}

export function platformChoices(connection: VmConnection | null): PlatformChoice[] {
  const skytap: PlatformChoice = { platform: 'skytap', label: 'Skytap', detail: 'An environment from a Skytap template in your account.' };
  if (!connection) return [skytap];
  const local: PlatformChoice =
    connection.mode === 'remote'
      ? {
          platform: 'local',
          label: 'Remote vm-manager',
          detail: `VMs on the remote vm-manager at ${connection.url ?? '(no URL)'}, the one the Local VMs page is connected to.`,
        }
      : {
          platform: 'local',
          label: 'This laptop',
          detail: "VMs on this laptop's own vm-manager (QEMU), the one the Local VMs page shows.",
        };
  return [skytap, local];
}

/** The short label a POV row shows for its platform. */
export function platformLabel(platform: string, connection: VmConnection | null): string {
  if (platform === 'skytap') return 'Skytap';
  if (platform === 'local') return connection?.mode === 'remote' ? 'Remote vm-manager' : 'This laptop';
  return platform;
}

/**
 * What the local platform lacks, in the capability registry's own words (shared/lab-platforms.ts,
 * `local`: `schedules`, `publishSets`, `suspend`), so the page and the core never say two things.
 */
const localNote = (f: Feature): string => PLATFORMS.local.features[f].note ?? '';
export const LOCAL_SCHEDULES_NOTE = localNote('schedules');
export const LOCAL_PUBLISH_SETS_NOTE = localNote('publishSets');
/** The registry's caveat on `suspend` for `local` (shown on a local POV's Suspend button). */
export const LOCAL_SUSPEND_NOTE = localNote('suspend');
export const LOCAL_NO_AUTO_DELETE = `No auto-delete date: ${LOCAL_SCHEDULES_NOTE}`;
export const LOCAL_NO_SHARE = `No share links: ${LOCAL_PUBLISH_SETS_NOTE}`;

/** Settles when the job does: its final record (subscribes first, then reads, so no update is missed). */
export function waitForJob(jobId: string): Promise<JobRecord> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (j: JobRecord) => {
      if (done || j.state === 'queued' || j.state === 'running') return;
      done = true;
      off();
      resolve(j);
    };
    const off = api.subscribe('jobs.update', jobId, (j) => finish(j));
    api.call('jobs.get', { id: jobId }).then(
      ({ job }) => finish(job),
      (e: unknown) => {
        if (done) return;
        done = true;
        off();
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The bundled test template (main/services/lab-platforms/local-lab-templates.ts TEST_TEMPLATE_ID). */
export const REHEARSAL_TEMPLATE_ID = 'povdesk-test';

/** No Skytap account saved (nor given by environment variables): the POVs page offers a rehearsal. */
export function noSkytapAccount(view: SettingsView | null): boolean {
  return !!view && view.skytap.username === '' && !view.skytap.tokenSet;
}

export type RehearsalStep = 'template' | 'image' | 'create';

/**
 * "Rehearse on this laptop": one local POV from the bundled test template. The template's images
 * must be in the vm-manager; the test image is built here first when the local manager lacks it
 * (vm.imageBuildTest: seconds, with its reference measurements, no boot). A remote manager without
 * it is refused with what to do. Returns the pov.create job's id.
 */
export async function rehearse(opts: {
  connection: VmConnection | null;
  name: string;
  onStep(step: RehearsalStep, message: string): void;
}): Promise<string> {
  opts.onStep('template', 'Reading the bundled test template…');
  const { templates } = await api.call('labTemplates.list', { platform: 'local' });
  const tpl = templates.find((t) => t.id === REHEARSAL_TEMPLATE_ID) ?? templates.find((t) => t.builtIn);
  if (!tpl) throw new Error(`The bundled test template (${REHEARSAL_TEMPLATE_ID}) is not in the local templates list.`);
  opts.onStep('image', 'Starting the vm-manager and reading its images…');
  const { images } = await api.call('vm.images', {});
  const have = new Set(images.map((i) => i.name));
  const missing = [...new Set(tpl.vms.map((v) => v.image).filter((i): i is string => !!i && !have.has(i)))];
  if (missing.length > 0) {
    const remote = opts.connection?.mode === 'remote';
    if (remote || missing.some((i) => i !== REHEARSAL_TEMPLATE_ID)) {
      throw new Error(
        `The ${remote ? 'remote ' : ''}vm-manager has no ` +
          `image ${missing.join(', ')}; ${remote ? 'import it there first' : 'build or import it on the Local VMs page first'} (the ` +
          `template "${tpl.name}" boots from it).`,
      );
    }
    opts.onStep('image', 'Building the test image (first time only: seconds, then one boot to learn its golden values)…');
    const { jobId } = await api.call('vm.imageBuildTest', {});
    const job = await waitForJob(jobId);
    if (job.state !== 'succeeded') throw new Error(`Building the test image ${job.state}: ${job.error?.message ?? 'no reason given'}`);
  }
  opts.onStep('create', `Creating the POV from "${tpl.name}"…`);
  const { jobId } = await api.call('pov.create', { platform: 'local', templateId: tpl.id, name: opts.name });
  return jobId;
}
