import { AppError } from '../../../shared/contract/errors';

/**
 * What each lab platform can do, so a feature a platform lacks is refused up front with the
 * reason instead of failing somewhere inside a job.
 *
 * bootstrapInjection is one intent with more than one mechanism:
 * - 'metadata': the platform stores the payload and the guest fetches it (Skytap's VM user_data
 *   via the metadata service at 169.254.169.254; only on automatic networks; nothing runs it for
 *   you, so the template must carry the runner).
 * - 'guest-exec': the platform runs a script on the guest itself.
 * - 'none': no way to hand a payload to a guest.
 */
export type BootstrapMechanism = 'metadata' | 'guest-exec' | 'none';

export type Feature = 'templates' | 'suspend' | 'publishSets' | 'schedules' | 'projectScoping' | 'bootstrapInjection';

export interface Support {
  supported: boolean;
  /** Why not (for refusals), or a caveat worth showing when supported. */
  note: string | null;
}

export interface PlatformCapabilities {
  id: string;
  label: string;
  bootstrapInjection: BootstrapMechanism;
  features: Record<Feature, Support>;
}

const yes = (note: string | null = null): Support => ({ supported: true, note });
const no = (note: string): Support => ({ supported: false, note });

export const PLATFORMS: Readonly<Record<string, PlatformCapabilities>> = {
  skytap: {
    id: 'skytap',
    label: 'Skytap',
    bootstrapInjection: 'metadata',
    features: {
      templates: yes(),
      suspend: yes('Suspend works only for x86 VMs with at most 256 GB RAM; Power VMs can only run or shut down.'),
      publishSets: yes('Skytap calls share links publish sets.'),
      schedules: yes('Auto-delete is a schedule with delete_at_end.'),
      projectScoping: yes(
        'Project paths (/v2/projects/{id}/templates, /configurations) are not yet confirmed against a live account.',
      ),
      bootstrapInjection: yes('metadata: the guest fetches user_data; only VMs on automatic networks can reach it.'),
    },
  },
  // issue 14 (platform helper): the Local platform as LAB-DESIGN.md fixes it; labtpl's rename of
  // local-qemu to local replaces both entries at merge.
  local: {
    id: 'local',
    label: 'This laptop (vm-manager)',
    bootstrapInjection: 'metadata',
    features: {
      templates: yes('Local templates: named sets of baked images.'),
      suspend: yes("Suspend is the vm-manager's stop: a stopped local VM boots again from its disk on start (nothing in memory survives)."),
      publishSets: no('A local VM has no public share link; share access through your own network instead.'),
      schedules: no('The vm-manager has no scheduler, so a local POV has no auto-delete; destroy it yourself.'),
      projectScoping: no('Projects are a Skytap concept.'),
      bootstrapInjection: yes("metadata: the vm-manager's metadata service serves user_data at /skytap/vms/self/user_data, set after power-on."),
    },
  },
  'local-qemu': {
    id: 'local-qemu',
    label: 'Local QEMU (vm-manager)',
    bootstrapInjection: 'guest-exec',
    features: {
      templates: no('Local VMs are built from images, not Skytap templates.'),
      suspend: yes(),
      publishSets: no('A local VM has no public share link; share access through your own network instead.'),
      schedules: no('The local vm-manager has no scheduler; stop or delete local VMs yourself.'),
      projectScoping: no('Projects are a Skytap concept.'),
      bootstrapInjection: yes('guest-exec: the vm-manager runs the script over its guest channel.'),
    },
  },
};

export function capabilitiesOf(platform: string): PlatformCapabilities {
  const caps = PLATFORMS[platform];
  if (!caps) {
    throw new AppError(
      'unsupported',
      `Unknown lab platform "${platform}"; known platforms: ${Object.keys(PLATFORMS).join(', ')}.`,
    );
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
