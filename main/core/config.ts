/**
 * What the core reads from the environment, each value checked where it is read: the composition
 * root (create.ts) asks here instead of parsing variables inline. The Skytap and control-plane
 * overrides live with their settings (services/settings, services/control-node/config).
 */
import { homedir } from 'node:os';
import type { Base } from './base';
import { defaultKnownHostsFiles } from '../services/ssh/openssh-known-hosts';
import { defaultOpensshConfig } from '../services/ssh/openssh-config';

/**
 * POVDESK_SKYTAP_POLL_MS: how often a job re-reads an environment while waiting (default 5000).
 * Tests and the e2e host shorten it; anything outside 10..60000 ms is refused loudly.
 */
export function pollMsFrom(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.POVDESK_SKYTAP_POLL_MS;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10 || n > 60_000) {
    throw new Error(`POVDESK_SKYTAP_POLL_MS must be an integer number of milliseconds from 10 to 60000, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/**
 * Where a bake may read a source image from: the user's home, POV Desk's home, and the
 * directories listed in POVDESK_BAKE_DIRS (colon-separated).
 */
export function bakeDirs(base: Pick<Base, 'env' | 'home'>): string[] {
  const extra = (base.env.POVDESK_BAKE_DIRS ?? '').split(':').filter(Boolean);
  return [homedir(), base.home, ...extra];
}

/**
 * OpenSSH's known_hosts files the terminals consult (read only): POVDESK_SSH_KNOWN_HOSTS
 * (colon-separated; set and empty: none), else the user's ~/.ssh/known_hosts and known_hosts2.
 */
export function opensshKnownHostsFiles(env: NodeJS.ProcessEnv): string[] {
  const raw = env.POVDESK_SSH_KNOWN_HOSTS;
  return raw === undefined ? defaultKnownHostsFiles() : raw.split(':').filter(Boolean);
}

/** The SSH agent terminals may sign in with: SSH_AUTH_SOCK, else on Windows OpenSSH's agent pipe. */
export function sshAgentSocket(env: NodeJS.ProcessEnv, platform = process.platform): string | null {
  return env.SSH_AUTH_SOCK || (platform === 'win32' ? '\\\\.\\pipe\\openssh-ssh-agent' : null);
}

/** OpenSSH's client config the profile form offers hosts from: POVDESK_SSH_CONFIG (set and empty: none), else ~/.ssh/config. */
export function opensshConfigFile(env: NodeJS.ProcessEnv): string | null {
  const raw = env.POVDESK_SSH_CONFIG;
  return raw === undefined ? defaultOpensshConfig() : raw || null;
}
