import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import type { saveTenantsArgs, TenantsView } from '../../../shared/contract/pam';
import type { SecretStore } from '../secrets/store';
import type { PamRepo, TenantRow } from './repo';
import type { PsTenant } from './password-safe';
import type { PraTenant } from './pra';

/**
 * A POV's tenants: the plain half in pam_tenants, every secret in the keychain under
 * pam:<povId>:<what> and nowhere else (never SQLite, a log line or a job record).
 */
export const SECRET_NAMES = [
  'pra-secret',
  'ps-api-key',
  'ps-runas-password',
  'ps-client-secret',
  'entitle-token',
  'broker-install-key',
  'fa-linux',
  'fa-windows',
] as const;
export type SecretName = (typeof SECRET_NAMES)[number];
export const secretAccount = (povId: string, name: SecretName) => `pam:${povId}:${name}`;

export interface ResolvedTenants {
  pra: PraTenant | null;
  ps: PsTenant | null;
  entitle: { url: string | null; token: string } | null;
  brokerInstallKey: string | null;
  functionalAccounts: { linux?: { accountName: string; password?: string }; windows?: { accountName: string; password?: string } };
  managedAccounts: { linux: string[]; windows: string[] };
}

type SaveArgs = z.output<typeof saveTenantsArgs>;

export class Tenants {
  /**
   * Whether each secret is in the keychain, as last read or written by this process: the POV list
   * shows every row's readiness, and asking the keychain for each row's flags on each list would
   * cost D-Bus round trips (the keychain is this process's alone to change).
   */
  private readonly present = new Map<string, boolean>();

  constructor(
    private readonly repo: PamRepo,
    private readonly secrets: SecretStore,
    /** Every secret read or written is registered here, so the log redacts it. */
    private readonly redact: (value: string) => void = () => {},
  ) {}

  private async put(povId: string, name: SecretName, value: string | undefined) {
    if (value === undefined) return;
    this.redact(value);
    await this.secrets.set(secretAccount(povId, name), value);
    this.present.set(secretAccount(povId, name), Boolean(value));
  }

  private async get(povId: string, name: SecretName): Promise<string | null> {
    const v = await this.secrets.get(secretAccount(povId, name));
    if (v) this.redact(v);
    this.present.set(secretAccount(povId, name), Boolean(v));
    return v || null;
  }

  private async has(povId: string, name: SecretName): Promise<boolean> {
    const account = secretAccount(povId, name);
    const known = this.present.get(account);
    if (known !== undefined) return known;
    const v = Boolean(await this.secrets.get(account));
    this.present.set(account, v);
    return v;
  }

  /** Secrets first: if the keychain refuses, nothing else changes. */
  async save(a: SaveArgs): Promise<void> {
    const { povId } = a;
    if (a.passwordSafe) {
      const ps = a.passwordSafe;
      const oauth = Boolean(ps.clientId);
      if (!oauth && !ps.runAs)
        throw new AppError('invalid_request', 'Password Safe needs a run-as user with its API key, or an OAuth client id with its secret');
      if (oauth && ps.apiKey)
        throw new AppError('invalid_request', 'give Password Safe either an API key (PS-Auth) or an OAuth client, not both');
    }
    await this.put(povId, 'pra-secret', a.pra?.clientSecret);
    await this.put(povId, 'ps-api-key', a.passwordSafe?.apiKey);
    await this.put(povId, 'ps-runas-password', a.passwordSafe?.runAsPassword);
    await this.put(povId, 'ps-client-secret', a.passwordSafe?.clientSecret);
    await this.put(povId, 'entitle-token', a.entitle?.token);
    await this.put(povId, 'broker-install-key', a.brokerInstallKey);
    await this.put(povId, 'fa-linux', a.functionalAccounts?.linux?.password);
    await this.put(povId, 'fa-windows', a.functionalAccounts?.windows?.password);
    const patch: Partial<Omit<TenantRow, 'pov_id' | 'updated_at'>> = {};
    if (a.pra) Object.assign(patch, { pra_site: a.pra.site, pra_client_id: a.pra.clientId });
    if (a.passwordSafe)
      Object.assign(patch, {
        ps_url: a.passwordSafe.url,
        ps_run_as: a.passwordSafe.runAs || null,
        ps_client_id: a.passwordSafe.clientId || null,
      });
    if (a.entitle) patch.entitle_url = a.entitle.url ?? null;
    if (a.functionalAccounts?.linux) patch.fa_linux = a.functionalAccounts.linux.accountName;
    if (a.functionalAccounts?.windows) patch.fa_windows = a.functionalAccounts.windows.accountName;
    if (a.managedAccounts)
      Object.assign(patch, {
        managed_linux: JSON.stringify(a.managedAccounts.linux),
        managed_windows: JSON.stringify(a.managedAccounts.windows),
      });
    // An Entitle section with only a URL still marks Entitle as configured (the row exists).
    if (a.entitle && patch.entitle_url === null) patch.entitle_url = '';
    this.repo.saveTenants(povId, patch);
  }

  async view(povId: string): Promise<TenantsView> {
    const t = this.repo.tenants(povId);
    const has = (n: SecretName) => this.has(povId, n);
    return {
      povId,
      pra: t?.pra_site ? { site: t.pra_site, clientId: t.pra_client_id ?? '', secretSet: await has('pra-secret') } : null,
      passwordSafe: t?.ps_url
        ? {
            url: t.ps_url,
            auth: t.ps_client_id ? 'oauth' : 'ps-auth',
            runAs: t.ps_run_as ?? '',
            clientId: t.ps_client_id ?? '',
            secretSet: t.ps_client_id ? await has('ps-client-secret') : await has('ps-api-key'),
          }
        : null,
      entitle:
        t && t.entitle_url !== null ? { url: t.entitle_url || 'https://api.entitle.io', tokenSet: await has('entitle-token') } : null,
      brokerInstallKeySet: await has('broker-install-key'),
      functionalAccounts: { linux: t?.fa_linux ?? null, windows: t?.fa_windows ?? null },
      managedAccounts: {
        linux: JSON.parse(t?.managed_linux ?? '[]') as string[],
        windows: JSON.parse(t?.managed_windows ?? '[]') as string[],
      },
    };
  }

  /** Whether a POV has any tenant saved. */
  saved(povId: string): boolean {
    return this.repo.tenants(povId) !== null;
  }

  /** Plain values plus secrets, for one run. A product with its secret missing is null. */
  async resolve(povId: string): Promise<ResolvedTenants> {
    const t = this.repo.tenants(povId);
    const praSecret = await this.get(povId, 'pra-secret');
    const psKey = await this.get(povId, 'ps-api-key');
    const psPwd = await this.get(povId, 'ps-runas-password');
    const psSecret = await this.get(povId, 'ps-client-secret');
    const entitleToken = await this.get(povId, 'entitle-token');
    const fa = async (os: 'linux' | 'windows') => {
      const name = os === 'linux' ? t?.fa_linux : t?.fa_windows;
      if (!name) return undefined;
      const pw = await this.get(povId, os === 'linux' ? 'fa-linux' : 'fa-windows');
      return { accountName: name, ...(pw ? { password: pw } : {}) };
    };
    const linux = await fa('linux');
    const windows = await fa('windows');
    let ps: PsTenant | null = null;
    if (t?.ps_url && t.ps_client_id && psSecret) ps = { url: t.ps_url, clientId: t.ps_client_id, clientSecret: psSecret };
    else if (t?.ps_url && t.ps_run_as && psKey)
      ps = { url: t.ps_url, apiKey: psKey, runAs: t.ps_run_as, ...(psPwd ? { runAsPassword: psPwd } : {}) };
    return {
      pra: t?.pra_site && t.pra_client_id && praSecret ? { site: t.pra_site, clientId: t.pra_client_id, clientSecret: praSecret } : null,
      ps,
      entitle: t && t.entitle_url !== null && entitleToken ? { url: t.entitle_url || null, token: entitleToken } : null,
      brokerInstallKey: await this.get(povId, 'broker-install-key'),
      functionalAccounts: { ...(linux ? { linux } : {}), ...(windows ? { windows } : {}) },
      managedAccounts: {
        linux: JSON.parse(t?.managed_linux ?? '[]') as string[],
        windows: JSON.parse(t?.managed_windows ?? '[]') as string[],
      },
    };
  }

  /** After a destroy: the POV's secrets leave the keychain. */
  async forget(povId: string): Promise<void> {
    for (const n of SECRET_NAMES) {
      await this.secrets.delete(secretAccount(povId, n));
      this.present.set(secretAccount(povId, n), false);
    }
  }
}
