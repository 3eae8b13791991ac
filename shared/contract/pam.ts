import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { refineCredentialUrl } from '../url-policy';
import { jobStarted, method, noArgs, lazyMethods } from './define';

/**
 * Wiring a POV into its BeyondTrust tenants (PRA, Password Safe, Entitle): docs/pam.md.
 * Secrets go in as write-only fields and come back only as "set" flags.
 */
export const PAM_PRODUCTS = ['pra', 'passwordSafe', 'entitle'] as const;
export type PamProduct = (typeof PAM_PRODUCTS)[number];

const url = lazySchema(() =>
  z
    .string()
    .trim()
    .regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'an http(s) URL with no query')
    .max(512),
);
/** A tenant URL carries the tenant's secrets: https, or http to loopback only (shared/url-policy.ts). */
const tenantUrl = (what: string) => url.superRefine(refineCredentialUrl(what));
const secret = lazySchema(() => z.string().min(1).max(8192));
const accountName = lazySchema(() =>
  z
    .string()
    .trim()
    .min(1)
    .max(245)
    .regex(/^[^\s'"`;|&$<>\\]+$/, 'an account name without spaces or shell characters'),
);

const functionalAccount = lazySchema(() => z.strictObject({ accountName, password: secret.optional() }));

export const saveTenantsArgs = lazySchema(() =>
  z.strictObject({
    povId: z.string().min(1),
    pra: z
      .strictObject({ site: tenantUrl('the PRA site URL'), clientId: z.string().trim().min(1).max(256), clientSecret: secret.optional() })
      .optional(),
    passwordSafe: z
      .strictObject({
        url: tenantUrl('the Password Safe URL'),
        /** PS-Auth: an API key with a run-as user (and its password when the key requires one). */
        runAs: z.string().trim().max(256).optional(),
        apiKey: secret.optional(),
        runAsPassword: secret.optional(),
        /** OAuth: client id + secret (Auth/Connect/Token), then SignAppIn with the bearer token. */
        clientId: z.string().trim().max(256).optional(),
        clientSecret: secret.optional(),
      })
      .optional(),
    entitle: z.strictObject({ url: tenantUrl('the Entitle URL').optional(), token: secret.optional() }).optional(),
    /** The Resource Broker install key generated in the Password Safe portal (no API makes one). */
    brokerInstallKey: secret.optional(),
    functionalAccounts: z.strictObject({ linux: functionalAccount.optional(), windows: functionalAccount.optional() }).optional(),
    managedAccounts: z.strictObject({ linux: z.array(accountName).max(20), windows: z.array(accountName).max(20) }).optional(),
  }),
);

export const tenantsView = lazySchema(() =>
  z.strictObject({
    povId: z.string(),
    pra: z.strictObject({ site: z.string(), clientId: z.string(), secretSet: z.boolean() }).nullable(),
    passwordSafe: z
      .strictObject({
        url: z.string(),
        auth: z.enum(['ps-auth', 'oauth']),
        runAs: z.string(),
        clientId: z.string(),
        secretSet: z.boolean(),
      })
      .nullable(),
    entitle: z.strictObject({ url: z.string(), tokenSet: z.boolean() }).nullable(),
    brokerInstallKeySet: z.boolean(),
    functionalAccounts: z.strictObject({ linux: z.string().nullable(), windows: z.string().nullable() }),
    managedAccounts: z.strictObject({ linux: z.array(z.string()), windows: z.array(z.string()) }),
  }),
);
export type TenantsView = z.infer<typeof tenantsView>;

export const PAM_TEST_OUTCOMES = ['ok', 'not_configured', 'unauthorized', 'permission_missing', 'failed'] as const;
export const pamTestResult = lazySchema(() =>
  z.strictObject({
    product: z.enum(PAM_PRODUCTS),
    outcome: z.enum(PAM_TEST_OUTCOMES),
    good: z.boolean(),
    message: z.string(),
    remedy: z.string().nullable(),
    reason: z.enum(['network', 'server', 'rate_limited']).nullable(),
  }),
);
export type PamTestResult = z.infer<typeof pamTestResult>;

export const ARTIFACT_STATES = ['pending', 'done', 'failed', 'skipped', 'waiting'] as const;
const item = lazySchema(() =>
  z.strictObject({
    state: z.enum(ARTIFACT_STATES),
    id: z.string().nullable(),
    detail: z.string().nullable(),
    error: z.string().nullable(),
  }),
);
export type PamItem = z.infer<typeof item>;

export const pamStatus = lazySchema(() =>
  z.strictObject({
    povId: z.string(),
    tenants: tenantsView,
    /** The POV Gateway: the clustered linux-x86 Jumpoint found by code_name pov_<id>. */
    gateway: item.extend({ connected: z.boolean(), node: z.string().nullable() }).strict(),
    jumpGroup: item,
    workgroup: item,
    container: item,
    /** "broker: unverified — check the portal" until Password Safe answers for an asset behind it. */
    broker: item.extend({ vm: z.string().nullable(), label: z.string() }).strict(),
    entitle: item.extend({ sshIntegration: z.strictObject({ enabled: z.boolean(), reason: z.string() }) }).strict(),
    vms: z.array(
      z.strictObject({
        vmId: z.string(),
        name: z.string(),
        os: z.string(),
        ip: z.string().nullable(),
        jumpItem: item.extend({ type: z.enum(['shell_jump', 'remote_rdp']).nullable() }).strict(),
        passwordSafe: item,
        entitle: item,
      }),
    ),
    /** The wire or unwire job running for this POV, if any. */
    jobId: z.string().nullable(),
    lastRun: z.strictObject({ op: z.enum(['wire', 'unwire']), state: z.string(), at: z.string() }).nullable(),
  }),
);
export type PamStatus = z.infer<typeof pamStatus>;

export const pamSettings = lazySchema(() =>
  z.strictObject({
    /** The Jumpoint container image (not public: supplied by the operator). */
    gatewayImage: z.string(),
    /** Extra `docker run` flags for it, one per line. */
    gatewayArgs: z.array(z.string()),
    connectTimeoutSec: z.number().int().positive(),
  }),
);

export const pamMethods = lazyMethods({
  'pam.saveTenants': () =>
    method("Saves a POV's PRA / Password Safe / Entitle tenants; secrets to the keychain only", saveTenantsArgs, tenantsView),
  'pam.test': () =>
    method(
      "One authenticated read against the SAVED tenant of one product; five outcomes like Skytap's Test connection",
      z.strictObject({ povId: z.string().min(1), product: z.enum(PAM_PRODUCTS) }),
      pamTestResult,
    ),
  'pam.wire': () =>
    method(
      'Wires the POV: Gateway, jump items, Password Safe, Entitle, broker (idempotent)',
      z.strictObject({ povId: z.string().min(1) }),
      jobStarted,
      {
        job: true,
      },
    ),
  'pam.status': () => method('What is wired for a POV, per VM, from the database', z.strictObject({ povId: z.string().min(1) }), pamStatus),
  'pam.unwire': () =>
    method(
      'Removes everything the wiring made in the tenants (destroy runs it first)',
      z.strictObject({ povId: z.string().min(1) }),
      jobStarted,
      {
        job: true,
      },
    ),
  'pam.getSettings': () => method('The Jumpoint container image and flags', noArgs, pamSettings),
  'pam.saveSettings': () =>
    method(
      'Saves the Jumpoint container image and flags',
      z.strictObject({
        gatewayImage: z.string().max(512).optional(),
        gatewayArgs: z.array(z.string().max(256)).max(32).optional(),
        connectTimeoutSec: z.number().int().min(10).max(3600).optional(),
      }),
      pamSettings,
    ),
});
