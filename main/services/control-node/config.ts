import { AppError } from '../../../shared/contract/errors';
import { checkCredentialUrl } from '../../../shared/url-policy';
import { HttpControlPlane, type ControlPlane } from './control-plane';
import { checkImage, checkPemBundle, checkTrustDomain, checkUrl, parseHostPort } from './shell';

/** Where control-node settings live: the app's key/value settings table (SettingsService). */
export interface KeyValue {
  getValue(key: string): string | null;
  setValue(key: string, value: string): void;
}
export interface Secrets {
  get(account: string): Promise<string | null>;
  set(account: string, value: string): Promise<void>;
  delete(account: string): Promise<boolean>;
}

export const CONTROL_PLANE_TOKEN_ACCOUNT = 'control-plane-token';
export const CONTROL_PLANE_ENV = { url: 'POVDESK_CONTROL_PLANE_URL', token: 'POVDESK_CONTROL_PLANE_TOKEN' } as const;

export interface ControlNodeConfig {
  /** Where POV Desk mints codes and reads enrolment (the control plane's API). */
  controlPlaneUrl: string;
  /** The URL the agent on the guest dials out to; blank means controlPlaneUrl. */
  agentUrl: string;
  agentImage: string;
  /** "Let agents attest through SPIRE". */
  spireEnabled: boolean;
  /** "SPIRE server address for agents" (host:port); blank means the control plane's own. */
  spireAddress: string;
  /** SPIFFE trust domain; blank means the control plane's own. */
  spireTrustDomain: string;
  /** PEM trust bundle the SPIRE server's certificate must chain to; blank means the control plane's own. */
  spireTrustBundle: string;
  spireAgentImage: string;
  spiffeHelperImage: string;
}

export const DEFAULT_CONFIG: ControlNodeConfig = {
  controlPlaneUrl: '',
  agentUrl: '',
  agentImage: '',
  spireEnabled: false,
  spireAddress: '',
  spireTrustDomain: '',
  spireTrustBundle: '',
  spireAgentImage: 'ghcr.io/spiffe/spire-agent:1.9.6',
  spiffeHelperImage: 'ghcr.io/spiffe/spiffe-helper:0.8.0',
};

const KEYS: Record<keyof ControlNodeConfig, string> = {
  controlPlaneUrl: 'controlNode.controlPlaneUrl',
  agentUrl: 'controlNode.agentUrl',
  agentImage: 'controlNode.agentImage',
  spireEnabled: 'controlNode.spireEnabled',
  spireAddress: 'controlNode.spireAddress',
  spireTrustDomain: 'controlNode.spireTrustDomain',
  spireTrustBundle: 'controlNode.spireTrustBundle',
  spireAgentImage: 'controlNode.spireAgentImage',
  spiffeHelperImage: 'controlNode.spiffeHelperImage',
};

/**
 * What Settings → Control node still lacks before any install can start, or null. The provision's
 * hook and Install control node check it first, so a laptop without a control plane gets a row
 * that says what to enter, not an install job that was bound to fail; the install job checks it too.
 */
export function installSettingsGap(cfg: ControlNodeConfig): string | null {
  const missing = [...(cfg.agentUrl || cfg.controlPlaneUrl ? [] : ['control-plane URL']), ...(cfg.agentImage ? [] : ['agent image'])];
  if (!missing.length) return null;
  const one = missing.length === 1;
  return (
    `no ${missing.join(' and no ')} ${one ? 'is' : 'are'} set; enter ${one ? 'it' : 'them'} in Settings → Control node, then press ` +
    `Install control node`
  );
}

export function readConfig(kv: KeyValue, env: NodeJS.ProcessEnv = {}): ControlNodeConfig {
  const s = (k: keyof ControlNodeConfig) => kv.getValue(KEYS[k]);
  return {
    controlPlaneUrl: env[CONTROL_PLANE_ENV.url] || (s('controlPlaneUrl') ?? DEFAULT_CONFIG.controlPlaneUrl),
    agentUrl: s('agentUrl') ?? '',
    agentImage: s('agentImage') ?? '',
    spireEnabled: s('spireEnabled') === 'true',
    spireAddress: s('spireAddress') ?? '',
    spireTrustDomain: s('spireTrustDomain') ?? '',
    spireTrustBundle: s('spireTrustBundle') ?? '',
    spireAgentImage: s('spireAgentImage') ?? DEFAULT_CONFIG.spireAgentImage,
    spiffeHelperImage: s('spiffeHelperImage') ?? DEFAULT_CONFIG.spiffeHelperImage,
  };
}

/** Validates then saves every field given (not one an environment variable overrides); blank strings clear optional fields. */
export function saveConfig(kv: KeyValue, patch: Partial<ControlNodeConfig>, env: NodeJS.ProcessEnv = {}): void {
  // An environment override is for this process only: the stored URL is kept.
  if (env[CONTROL_PLANE_ENV.url]) patch = { ...patch, controlPlaneUrl: undefined };
  if (patch.controlPlaneUrl) checkUrl('control-plane URL', patch.controlPlaneUrl);
  if (patch.controlPlaneUrl) checkCredentialUrl('the control-plane URL', patch.controlPlaneUrl, 'enter an https:// URL');
  if (patch.agentUrl) checkUrl('agent URL', patch.agentUrl);
  if (patch.agentImage) checkImage('agent image', patch.agentImage);
  if (patch.spireAddress) {
    // Stored as host:port, the default port (8081) written out so the setting says what is used.
    const hp = parseHostPort(patch.spireAddress);
    patch = { ...patch, spireAddress: `${hp.host}:${hp.port}` };
  }
  if (patch.spireTrustDomain) checkTrustDomain(patch.spireTrustDomain);
  if (patch.spireTrustBundle) patch = { ...patch, spireTrustBundle: checkPemBundle(patch.spireTrustBundle) };
  if (patch.spireAgentImage !== undefined) checkImage('spire-agent image', patch.spireAgentImage);
  if (patch.spiffeHelperImage !== undefined) checkImage('spiffe-helper image', patch.spiffeHelperImage);
  for (const [k, v] of Object.entries(patch) as [keyof ControlNodeConfig, string | boolean | undefined][]) {
    if (v === undefined) continue;
    kv.setValue(KEYS[k], String(v));
  }
}

/** An HTTP control plane from the saved settings; refuses with the remedy when one is missing. */
export async function controlPlaneFrom(kv: KeyValue, secrets: Secrets, env: NodeJS.ProcessEnv = {}): Promise<ControlPlane> {
  const cfg = readConfig(kv, env);
  if (!cfg.controlPlaneUrl) {
    throw new AppError('unavailable', 'no control-plane URL is set; enter it in Settings → Control node');
  }
  const token = env[CONTROL_PLANE_ENV.token] || (await secrets.get(CONTROL_PLANE_TOKEN_ACCOUNT));
  if (!token) throw new AppError('unauthorized', 'no control-plane token is saved; enter it in Settings → Control node');
  return new HttpControlPlane(cfg.controlPlaneUrl, token);
}
