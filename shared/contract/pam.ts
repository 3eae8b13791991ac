import { z } from 'zod';
import { jobStarted, method, noArgs } from './define';

/**
 * Wiring a POV into its BeyondTrust tenants (PRA, Password Safe, Entitle): docs/pam.md.
 * Secrets go in as write-only fields and come back only as "set" flags.
 */
export const PAM_PRODUCTS = ['pra', 'passwordSafe', 'entitle'] as const;
export type PamProduct = (typeof PAM_PRODUCTS)[number];

const url = z.string().trim().regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'an http(s) URL with no query').max(512);
const secret = z.string().min(1).max(8192);
const accountName = z.string().trim().min(1).max(245).regex(/^[^\s'"`;|&$<>\\]+$/, 'an account name without spaces or shell characters');

const functionalAccount = z.object({ accountName, password: secret.optional() }).strict();

export const saveTenantsArgs = z
  .object({
    povId: z.string().min(1),
    pra: z.object({ site: url, clientId: z.string().trim().min(1).max(256), clientSecret: secret.optional() }).strict().optional(),
    passwordSafe: z
      .object({
        url,
        /** PS-Auth: an API key with a run-as user (and its password when the key requires one). */
        runAs: z.string().trim().max(256).optional(),
        apiKey: secret.optional(),
        runAsPassword: secret.optional(),
        /** OAuth: client id + secret (Auth/Connect/Token), then SignAppIn with the bearer token. */
        clientId: z.string().trim().max(256).optional(),
        clientSecret: secret.optional(),
      })
      .strict()
      .optional(),
    entitle: z.object({ url: url.optional(), token: secret.optional() }).strict().optional(),
    /** The Resource Broker install key generated in the Password Safe portal (no API makes one). */
    brokerInstallKey: secret.optional(),
    functionalAccounts: z.object({ linux: functionalAccount.optional(), windows: functionalAccount.optional() }).strict().optional(),
    managedAccounts: z.object({ linux: z.array(accountName).max(20), windows: z.array(accountName).max(20) }).strict().optional(),
  })
  .strict();

export const tenantsView = z
  .object({
    povId: z.string(),
    pra: z.object({ site: z.string(), clientId: z.string(), secretSet: z.boolean() }).strict().nullable(),
    passwordSafe: z
      .object({ url: z.string(), auth: z.enum(['ps-auth', 'oauth']), runAs: z.string(), clientId: z.string(), secretSet: z.boolean() })
      .strict()
      .nullable(),
    entitle: z.object({ url: z.string(), tokenSet: z.boolean() }).strict().nullable(),
    brokerInstallKeySet: z.boolean(),
    functionalAccounts: z.object({ linux: z.string().nullable(), windows: z.string().nullable() }).strict(),
    managedAccounts: z.object({ linux: z.array(z.string()), windows: z.array(z.string()) }).strict(),
  })
  .strict();
export type TenantsView = z.infer<typeof tenantsView>;

export const PAM_TEST_OUTCOMES = ['ok', 'not_configured', 'unauthorized', 'permission_missing', 'failed'] as const;
export const pamTestResult = z
  .object({
    product: z.enum(PAM_PRODUCTS),
    outcome: z.enum(PAM_TEST_OUTCOMES),
    good: z.boolean(),
    message: z.string(),
    remedy: z.string().nullable(),
    reason: z.enum(['network', 'server', 'rate_limited']).nullable(),
  })
  .strict();
export type PamTestResult = z.infer<typeof pamTestResult>;

export const ARTIFACT_STATES = ['pending', 'done', 'failed', 'skipped', 'waiting'] as const;
const item = z
  .object({ state: z.enum(ARTIFACT_STATES), id: z.string().nullable(), detail: z.string().nullable(), error: z.string().nullable() })
  .strict();
export type PamItem = z.infer<typeof item>;

export const pamStatus = z
  .object({
    povId: z.string(),
    tenants: tenantsView,
    /** The POV Gateway: the clustered linux-x86 Jumpoint found by code_name pov_<id>. */
    gateway: item.extend({ connected: z.boolean(), node: z.string().nullable() }).strict(),
    jumpGroup: item,
    workgroup: item,
    container: item,
    /** "broker: unverified — check the portal" until Password Safe answers for an asset behind it. */
    broker: item.extend({ vm: z.string().nullable(), label: z.string() }).strict(),
    entitle: item.extend({ sshIntegration: z.object({ enabled: z.boolean(), reason: z.string() }).strict() }).strict(),
    vms: z.array(
      z
        .object({
          vmId: z.string(),
          name: z.string(),
          os: z.string(),
          ip: z.string().nullable(),
          jumpItem: item.extend({ type: z.enum(['shell_jump', 'remote_rdp']).nullable() }).strict(),
          passwordSafe: item,
          entitle: item,
        })
        .strict(),
    ),
    /** The wire or unwire job running for this POV, if any. */
    jobId: z.string().nullable(),
    lastRun: z.object({ op: z.enum(['wire', 'unwire']), state: z.string(), at: z.string() }).strict().nullable(),
  })
  .strict();
export type PamStatus = z.infer<typeof pamStatus>;

export const pamSettings = z
  .object({
    /** The Jumpoint container image (not public: supplied by the operator). */
    gatewayImage: z.string(),
    /** Extra `docker run` flags for it, one per line. */
    gatewayArgs: z.array(z.string()),
    connectTimeoutSec: z.number().int().positive(),
  })
  .strict();

export const pamMethods = {
  'pam.saveTenants': method('Saves a POV\'s PRA / Password Safe / Entitle tenants; secrets to the keychain only', saveTenantsArgs, tenantsView),
  'pam.test': method(
    'One authenticated read against the SAVED tenant of one product; five outcomes like Skytap\'s Test connection',
    z.object({ povId: z.string().min(1), product: z.enum(PAM_PRODUCTS) }).strict(),
    pamTestResult,
  ),
  'pam.wire': method('Wires the POV: Gateway, jump items, Password Safe, Entitle, broker (idempotent)', z.object({ povId: z.string().min(1) }).strict(), jobStarted, {
    job: true,
  }),
  'pam.status': method('What is wired for a POV, per VM, from the database', z.object({ povId: z.string().min(1) }).strict(), pamStatus),
  'pam.unwire': method('Removes everything the wiring made in the tenants (destroy runs it first)', z.object({ povId: z.string().min(1) }).strict(), jobStarted, {
    job: true,
  }),
  'pam.getSettings': method('The Jumpoint container image and flags', noArgs, pamSettings),
  'pam.saveSettings': method(
    'Saves the Jumpoint container image and flags',
    z.object({ gatewayImage: z.string().max(512).optional(), gatewayArgs: z.array(z.string().max(256)).max(32).optional(), connectTimeoutSec: z.number().int().min(10).max(3600).optional() }).strict(),
    pamSettings,
  ),
} as const;
