import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { method, noArgs, lazyMethods } from './define';

const id = lazySchema(() => z.string().trim().min(1).max(200));

export const runnerLine = lazySchema(() =>
  z.strictObject({ n: z.number().int().min(1), text: z.string(), sum: z.string().regex(/^[0-9a-f]{4}$/) }),
);

export const runnerScriptView = lazySchema(() =>
  z.strictObject({
    /** The runner as it is installed: /usr/local/sbin/dashboard-bootstrap-runner. */
    path: z.string(),
    script: z.string(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    unit: z.string(),
    unitPath: z.string(),
    /** Each line with a short checksum (first 4 hex digits of the line's sha256). */
    lines: z.array(runnerLine),
    /** Commands for the console: verify the whole file; print every line's short checksum. */
    checks: z.strictObject({ whole: z.string(), perLine: z.string() }),
  }),
);
export type RunnerScriptView = z.infer<typeof runnerScriptView>;

export const controlNodeSummary = lazySchema(() =>
  z.strictObject({
    name: z.string().nullable(),
    vmId: z.string().nullable(),
    /** none (refused: see reason) | installing | waiting | enrolled | failed | revoked (POV destroyed) | null (not installed) */
    status: z.string().nullable(),
    reason: z.string().nullable(),
    /** spire | ed25519 once enrolled */
    mode: z.string().nullable(),
    /** The VM the resolution picks now, or null with `reason`. */
    resolvedVm: z.string().nullable(),
    /** The POV's Entitle agent host and Resource Broker host names (excluded from step 3). */
    entitleHost: z.string().nullable().optional(),
    brokerHost: z.string().nullable().optional(),
  }),
);

export const controlNodeSettingsView = lazySchema(() =>
  z.strictObject({
    controlPlaneUrl: z.string(),
    agentUrl: z.string(),
    agentImage: z.string(),
    spireEnabled: z.boolean(),
    spireAddress: z.string(),
    spireTrustDomain: z.string(),
    spireTrustBundle: z.string(),
    spireAgentImage: z.string(),
    spiffeHelperImage: z.string(),
    tokenSet: z.boolean(),
  }),
);

const optionalText = (max: number) => z.string().trim().max(max).optional();

export const controlNodeMethods = lazyMethods({
  'controlNode.previewBootstrap': () =>
    method(
      "What would be injected for a POV's control node, with a placeholder code: the script as written, the policy, and the " +
        'fitted tier and size',
      z.strictObject({ povId: id }),
      z.strictObject({
        vm: z.string(),
        script: z.string(),
        policy: z.string(),
        tier: z.union([z.literal(1), z.literal(2), z.literal(3)]),
        chars: z.number().int(),
        originalChars: z.number().int(),
        limit: z.number().int(),
      }),
    ),
  'controlNode.getSettings': () =>
    method('Control-plane and agent settings; says whether a token is set, never the token', noArgs, controlNodeSettingsView),
  'controlNode.saveSettings': () =>
    method(
      'Save control-plane and agent settings; the token goes to the keychain (omit it to keep the stored one)',
      z.strictObject({
        controlPlaneUrl: optionalText(500),
        agentUrl: optionalText(500),
        agentImage: optionalText(300),
        spireEnabled: z.boolean().optional(),
        spireAddress: optionalText(300),
        spireTrustDomain: optionalText(255),
        spireTrustBundle: z.string().max(64_000).optional(),
        spireAgentImage: optionalText(300),
        spiffeHelperImage: optionalText(300),
        token: z.string().min(1).max(2000).optional(),
      }),
      controlNodeSettingsView,
    ),
});
