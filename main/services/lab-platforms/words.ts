import { AppError } from '../../../shared/contract/errors';

/**
 * How the one POV lifecycle names a platform's environment in what it writes on a POV row and in
 * its job log, so each platform keeps its own messages (Skytap's are the ones it always had).
 * Static per platform, like the registry (shared/lab-platforms.ts): a message can be chosen before any client is built.
 */
export interface PlatformWords {
  /** Who answers, in progress lines and messages: 'Skytap', 'the vm-manager'. */
  name: string;
  /** 'POV "x" has no <envNoun>.': 'Skytap environment', 'environment'. */
  envNoun: string;
  /** Why a create was refused before anything was made: the row's message and the error's. */
  noTemplate(templateId: string): { row: string; error: string };
  /** What is left after a create stopped past the commit (the end of the row's message). */
  keptAfterFailure(envId: string): string;
  /** What may be left after a destroy stopped (then "; press Destroy again …"). */
  mayRemain(envId: string): string;
  /** The environment vanished while a step waited on it (then "while waiting for it to be …"). */
  goneWhileWaiting(envId: string): string;
  /** An empty VM read, kept as it was (then "; kept the VM rows as they were"). */
  noVms: string;
  /** The progress line of the create request. */
  createRequest(templateId: string): string;
  /** The progress line of a power request. */
  powerRequest(target: 'running' | 'suspended'): string;
  /** How the platform says an environment is gone: "already gone (<goneSign>)". */
  goneSign: string;
}

export const PLATFORM_WORDS: Readonly<Record<'skytap' | 'local', PlatformWords>> = {
  skytap: {
    name: 'Skytap',
    envNoun: 'Skytap environment',
    noTemplate: (id) => ({
      row:
        `Template ${id} is not visible to this Skytap account (or project); nothing was created. Pick a template from the list and ` +
        `create again; press Destroy to remove this row.`,
      error: `Skytap template ${id} is not visible to this account or project; pick one from the template list.`,
    }),
    keptAfterFailure: (envId) => `Environment ${envId} still exists in Skytap and may be billing; press Destroy to remove it.`,
    mayRemain: (envId) => `Environment ${envId} may still exist in Skytap and may still be billing`,
    goneWhileWaiting: (envId) => `Environment ${envId} no longer exists in Skytap (404)`,
    noVms: 'Skytap returned no VMs',
    createRequest: (templateId) => `POST /configurations from template ${templateId}`,
    powerRequest: (target) => `PUT runstate ${target}`,
    goneSign: '404',
  },
  local: {
    name: 'the vm-manager',
    envNoun: 'environment',
    noTemplate: (id) => ({
      row:
        `There is no local template ${id}; nothing was created. Pick a template from the list and create again; press Destroy to ` +
        `remove this row.`,
      error: `No local template ${id}; pick one from the template list.`,
    }),
    keptAfterFailure: (envId) => `The VMs of ${envId} that were made are kept on the vm-manager; press Destroy to remove them.`,
    mayRemain: (envId) => `VMs of ${envId} may still exist on the vm-manager`,
    goneWhileWaiting: (envId) => `The vm-manager no longer lists any VM of ${envId}`,
    noVms: 'the vm-manager lists no VM of this POV',
    createRequest: (templateId) => `creating the VMs of local template ${templateId}`,
    powerRequest: (target) =>
      target === 'running' ? 'starting every stopped VM' : "stopping every VM (the vm-manager's stop; they boot again from disk on start)",
    goneSign: 'no VM listed',
  },
};

export function wordsOf(platform: string): PlatformWords {
  const w = (PLATFORM_WORDS as Record<string, PlatformWords | undefined>)[platform];
  if (!w) throw new AppError('unsupported', `No lab platform "${platform}" is wired in this process.`);
  return w;
}

/** "the vm-manager …" at the start of a sentence. */
export function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
