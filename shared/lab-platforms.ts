import { AppError } from './contract/errors';

/**
 * What each lab platform can do, so a feature a platform lacks is refused up front with the
 * reason instead of failing somewhere inside a job.
 *
 * bootstrapInjection is one intent with more than one mechanism:
 * - 'metadata': the platform stores the payload and the guest fetches it from the metadata service
 *   at 169.254.169.254, /skytap/vms/self/user_data (Skytap: only on automatic networks; the
 *   vm-manager serves the same path); nothing runs it for you, so the image must carry the runner.
 * - 'guest-exec': the platform runs a script on the guest itself.
 * - 'none': no way to hand a payload to a guest.
 */
export type BootstrapMechanism = 'metadata' | 'guest-exec' | 'none';

export type Feature = 'templates' | 'suspend' | 'publishSets' | 'schedules' | 'projectScoping' | 'bootstrapInjection';

/** The lab platforms a POV can run on ('local' is whichever vm-manager the app is connected to: its own or a remote one). */
export const LAB_PLATFORM_IDS = ['skytap', 'local'] as const;
export type LabPlatformId = (typeof LAB_PLATFORM_IDS)[number];

export interface Support {
  supported: boolean;
  /** Why not (for refusals), or a caveat worth showing when supported. */
  note: string | null;
}

export interface PlatformCapabilities {
  id: LabPlatformId;
  label: string;
  bootstrapInjection: BootstrapMechanism;
  features: Record<Feature, Support>;
}

const yes = (note: string | null = null): Support => ({ supported: true, note });
const no = (note: string): Support => ({ supported: false, note });

/**
 * Each claim here is checked against what the platform really does where that can be checked on
 * this machine (test/lab/capabilities-truth.test.ts): a claim nothing does is a bug.
 */
export const PLATFORMS: Readonly<Record<LabPlatformId, PlatformCapabilities>> = {
  skytap: {
    id: 'skytap',
    label: 'Skytap',
    bootstrapInjection: 'metadata',
    features: {
      templates: yes(),
      suspend: yes('Suspend works only for x86 VMs with at most 256 GB RAM; Power VMs can only run or shut down.'),
      publishSets: yes('Skytap calls share links publish sets.'),
      schedules: yes('Auto-delete is a schedule with delete_at_end.'),
      projectScoping: yes('Project paths (/v2/projects/{id}/templates, /configurations) are not yet confirmed against a live account.'),
      bootstrapInjection: yes('metadata: the guest fetches user_data; only VMs on automatic networks can reach it.'),
    },
  },
  local: {
    id: 'local',
    label: 'This laptop (vm-manager)',
    bootstrapInjection: 'metadata',
    features: {
      templates: yes('Local templates: named sets of images in the connected vm-manager (Templates page, "New local template").'),
      suspend: yes(
        "Suspend is the vm-manager's stop and resume its start: a stopped local VM boots again from its disk, so what was in " +
          'memory is lost.',
      ),
      publishSets: no('The vm-manager has no share links; share access to a local VM through your own network instead.'),
      schedules: no('The vm-manager has no scheduler, so a local POV has no auto-delete timer; destroy it yourself.'),
      projectScoping: no('Projects are a Skytap concept.'),
      bootstrapInjection: yes(
        "metadata: the vm-manager's metadata service serves user_data at /skytap/vms/self/user_data, as Skytap's does; it is set " +
          "after power-on. A vm-manager without POV Desk's user-data route (giantswarm's own) takes user_data only at create.",
      ),
    },
  },
};

export function isLabPlatform(platform: string): platform is LabPlatformId {
  return (LAB_PLATFORM_IDS as readonly string[]).includes(platform);
}

export function capabilitiesOf(platform: string): PlatformCapabilities {
  const caps = isLabPlatform(platform) ? PLATFORMS[platform] : undefined;
  if (!caps) {
    throw new AppError('unsupported', `Unknown lab platform "${platform}"; known platforms: ${Object.keys(PLATFORMS).join(', ')}.`);
  }
  return caps;
}

/** Throws AppError('unsupported') naming the platform and the reason when it lacks the feature. */
export function requireCapability(platform: string, feature: Feature): void {
  const caps = capabilitiesOf(platform);
  const s = caps.features[feature];
  if (!s.supported) {
    throw new AppError('unsupported', `${caps.label} cannot do ${describe(feature)}: ${s.note ?? 'not supported'}`);
  }
}

/**
 * The control node's agent install hands its payload over as metadata; a platform whose mechanism
 * is anything else is refused outright rather than failing inside a job.
 */
export function requireBootstrapMechanism(platform: string, wanted: BootstrapMechanism): void {
  const caps = capabilitiesOf(platform);
  if (caps.bootstrapInjection !== wanted) {
    throw new AppError(
      'unsupported',
      `${caps.label} injects bootstrap payloads by ${caps.bootstrapInjection}, not ${wanted}; ` +
        'this install needs a platform whose guests fetch the payload from a metadata service.',
    );
  }
}

function describe(f: Feature): string {
  switch (f) {
    case 'templates':
      return 'template instantiation';
    case 'suspend':
      return 'suspend';
    case 'publishSets':
      return 'share links (publish sets)';
    case 'schedules':
      return 'schedules (auto-delete timers)';
    case 'projectScoping':
      return 'project scoping';
    case 'bootstrapInjection':
      return 'bootstrap injection';
  }
}
