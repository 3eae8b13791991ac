import { randomBytes } from 'node:crypto';
import { checkFields, Double, type Field, type Reply, type Req } from './server';

/**
 * Password Safe's public API v3 on loopback, from BeyondTrust's official Go client
 * (passwordsafe-entities.go.txt) and the API guide as summarised in ../shared/research/pam:
 * - PS-Auth (`PS-Auth key=…; runas=…; pwd=[…];`) or OAuth (POST Auth/Connect/Token, then a
 *   Bearer) on POST Auth/SignAppIn, which sets ASP.NET_SessionId; every other call needs that
 *   cookie; POST Auth/Signout ends the session;
 * - ?version= (3.0–3.3; anything else 400);
 * - the structs' validation: required, max lengths, oneof, and required_if (FunctionalAccountID
 *   when AutoManagementFlag; ChangeFrequencyDays when xdays; Password unless auto-managed);
 * - 400 with a JSON string message for a refused body, 404 for an unknown id.
 * Choices the sources do not settle (docs/pam.md): a workgroup with assets cannot be deleted;
 * deleting an asset deletes its managed system and accounts; a functional account referenced by a
 * managed system cannot be deleted.
 */
const S = (max: number, req = false): Field => ({ t: 'string', max, req });
const I = (min?: number, max?: number, req = false): Field => ({
  t: 'integer',
  ...(min !== undefined ? { min } : {}),
  ...(max !== undefined ? { max } : {}),
  req,
});
const B: Field = { t: 'boolean' };

export const PS_FIELDS = {
  workgroup: { OrganizationID: S(36), Name: S(256, true) },
  asset: {
    IPAddress: S(46, true),
    AssetName: S(128),
    DnsName: S(255),
    DomainName: S(64),
    MacAddress: S(128),
    AssetType: S(64),
    Description: S(255),
    OperatingSystem: S(255),
  },
  managedSystem: {
    PlatformID: I(1, undefined, true),
    ContactEmail: S(1000),
    Description: S(255),
    Port: I(1, 65535),
    Timeout: I(1),
    SshKeyEnforcementMode: I(0, 2),
    PasswordRuleID: I(0),
    DSSKeyRuleID: I(0),
    LoginAccountID: I(0),
    ReleaseDuration: I(1, 525600),
    MaxReleaseDuration: I(1, 525600),
    ISAReleaseDuration: I(1, 525600),
    AutoManagementFlag: B,
    FunctionalAccountID: I(1),
    ElevationCommand: S(80),
    CheckPasswordFlag: B,
    ChangePasswordAfterAnyReleaseFlag: B,
    ResetPasswordOnMismatchFlag: B,
    ChangeFrequencyType: { t: 'string', enum: ['first', 'last', 'xdays'] },
    ChangeFrequencyDays: I(1, 999),
    ChangeTime: { t: 'string', pattern: /^([01]\d|2[0-3]):[0-5]\d$/ },
    RemoteClientType: { t: 'string', enum: ['None', 'EPM'] },
    ApplicationHostID: I(1),
    IsApplicationHost: B,
  },
  functionalAccount: {
    PlatformID: I(1, undefined, true),
    DomainName: S(500),
    AccountName: S(245, true),
    DisplayName: S(100),
    Password: S(10_000),
    PrivateKey: S(100_000),
    Passphrase: S(10_000),
    Description: S(1000),
    ElevationCommand: S(80),
    TenantID: S(36),
    ObjectID: S(36),
    Secret: S(255),
    ServiceAccountEmail: S(255),
    AzureInstance: { t: 'string', enum: ['AzurePublic', 'AzureUsGovernment'] },
  },
  managedAccount: {
    AccountName: S(245, true),
    Password: S(10_000),
    DomainName: S(50),
    UserPrincipalName: S(500),
    SAMAccountName: S(20),
    DistinguishedName: S(1000),
    PrivateKey: S(100_000),
    Passphrase: S(10_000),
    PasswordFallbackFlag: B,
    LoginAccountFlag: B,
    Description: S(1024),
    AutoManagementFlag: B,
    ReleaseDuration: I(1, 525600),
    MaxReleaseDuration: I(1, 525600),
    ISAReleaseDuration: I(1, 525600),
  },
} satisfies Record<string, Record<string, Field>>;

export const PLATFORMS = [
  { PlatformID: 1, Name: 'Windows', ShortName: 'WIN', PortFlag: false, DefaultPort: 0, AutoManagementFlag: true },
  { PlatformID: 2, Name: 'Linux', ShortName: 'LINUX', PortFlag: true, DefaultPort: 22, AutoManagementFlag: true },
  { PlatformID: 4, Name: 'Active Directory', ShortName: 'AD', PortFlag: false, DefaultPort: 0, AutoManagementFlag: true },
];
const VERSIONS = ['3.0', '3.1', '3.2', '3.3'];
const BASE = '/BeyondTrust/api/public/v3/';

type Row = Record<string, unknown>;

export class PasswordSafeDouble extends Double {
  readonly apiKeys = new Map<string, { runAs: string; password: string | null }>();
  readonly oauthClients = new Map<string, string>();
  readonly bearers = new Set<string>();
  readonly sessions = new Set<string>();
  readonly signIns: string[] = [];
  readonly signOuts: string[] = [];
  readonly versionsSeen = new Set<string>();
  readonly workgroups = new Map<number, Row>();
  readonly assets = new Map<number, Row>();
  readonly systems = new Map<number, Row>();
  readonly functionalAccounts = new Map<number, Row>();
  readonly accounts = new Map<number, Row>();
  /** Denied feature permissions, e.g. 'Workgroups' → 403 (for Test's permission outcome). */
  readonly denied = new Set<string>();
  private seq = 100;

  count(): number {
    return this.workgroups.size + this.assets.size + this.systems.size + this.functionalAccounts.size + this.accounts.size;
  }

  private bad(message: string): Reply {
    return { status: 400, body: message };
  }

  private signIn(r: Req): Reply {
    const auth = r.headers.authorization ?? '';
    const ps = /^PS-Auth key=([^;]+);\s*runas=([^;]+);(?:\s*pwd=\[(.*)\];)?\s*$/.exec(auth);
    let user: string | null = null;
    if (ps) {
      const k = this.apiKeys.get(ps[1]!);
      if (k && k.runAs === ps[2] && (k.password === null || k.password === ps[3])) user = ps[2]!;
    } else if (auth.startsWith('Bearer ') && this.bearers.has(auth.slice(7))) user = 'oauth-client';
    if (!user) return { status: 401, body: 'User not authenticated' };
    const sid = randomBytes(16).toString('hex');
    this.sessions.add(sid);
    this.signIns.push(sid);
    return {
      status: 200,
      headers: { 'Set-Cookie': `ASP.NET_SessionId=${sid}; path=/; HttpOnly; SameSite=Lax` },
      body: { UserId: 7, EmailAddress: `${user}@example.test`, UserName: user, Name: user },
    };
  }

  protected handle(r: Req): Reply {
    if (!r.path.startsWith(BASE)) return { status: 404, body: 'Not Found' };
    const path = r.path.slice(BASE.length);
    if (r.query.version !== undefined) {
      this.versionsSeen.add(r.query.version);
      if (!VERSIONS.includes(r.query.version)) return this.bad(`API version ${r.query.version} is not supported`);
    }
    if (r.method === 'POST' && path === 'Auth/Connect/Token') {
      const f = new URLSearchParams(r.raw);
      if (f.get('grant_type') !== 'client_credentials' || this.oauthClients.get(f.get('client_id') ?? '') !== f.get('client_secret'))
        return { status: 401, body: { error: 'invalid_client' } };
      const t = randomBytes(20).toString('hex');
      this.bearers.add(t);
      return { status: 200, body: { access_token: t, expires_in: 3600, token_type: 'Bearer', scope: 'publicapi' } };
    }
    if (r.method === 'POST' && path === 'Auth/SignAppIn') return this.signIn(r);
    const sid = /ASP\.NET_SessionId=([0-9a-f]+)/.exec(r.headers.cookie ?? '')?.[1];
    if (!sid || !this.sessions.has(sid)) return { status: 401, body: 'User not authenticated' };
    if (r.method === 'POST' && path === 'Auth/Signout') {
      this.sessions.delete(sid);
      this.signOuts.push(sid);
      return { status: 200 };
    }
    if ([...this.denied].some((d) => path.startsWith(d))) return { status: 403, body: 'Access denied' };
    return this.entities(r, path);
  }

  private validate(body: unknown, fields: Record<string, Field>): { row: Row } | { error: Reply } {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return { error: this.bad('The request body must be a JSON object') };
    const row = body as Row;
    const { unknown, errors } = checkFields(row, fields);
    if (unknown.length) return { error: this.bad(`Unknown field(s): ${unknown.join(', ')}`) };
    const first = Object.values(errors)[0]?.[0];
    return first ? { error: this.bad(first) } : { row };
  }

  private entities(r: Req, path: string): Reply {
    const seg = path.split('/');
    const n = (i: number) => Number(seg[i]);
    const list = (m: Map<number, Row>, pred: (x: Row) => boolean = () => true) => ({ status: 200, body: [...m.values()].filter(pred) });
    const [a, b, c] = seg;
    if (r.method === 'GET' && path === 'Platforms') return { status: 200, body: PLATFORMS };
    if (a === 'Workgroups' && seg.length === 1) {
      if (r.method === 'GET') return list(this.workgroups);
      if (r.method === 'POST') {
        const v = this.validate(r.json, PS_FIELDS.workgroup);
        if ('error' in v) return v.error;
        if ([...this.workgroups.values()].some((w) => String(w.Name).toLowerCase() === String(v.row.Name).toLowerCase()))
          return { status: 409, body: 'A workgroup with that name already exists' };
        const ID = ++this.seq;
        const wg = { ID, OrganizationID: v.row.OrganizationID ?? '00000000-0000-0000-0000-000000000000', Name: v.row.Name };
        this.workgroups.set(ID, wg);
        return { status: 201, body: wg };
      }
    }
    if (a === 'Workgroups' && seg.length === 2 && r.method === 'DELETE') {
      if (!this.workgroups.has(n(1))) return { status: 404, body: 'Workgroup not found' };
      if ([...this.assets.values()].some((x) => x.WorkgroupID === n(1))) return this.bad('The workgroup still has assets');
      this.workgroups.delete(n(1));
      return { status: 200 };
    }
    if (a === 'Workgroups' && c === 'Assets' && seg.length === 3) {
      const wg = this.workgroups.get(n(1));
      if (!wg) return { status: 404, body: 'Workgroup not found' };
      if (r.method === 'GET') return list(this.assets, (x) => x.WorkgroupID === wg.ID);
      if (r.method === 'POST') {
        const v = this.validate(r.json, PS_FIELDS.asset);
        if ('error' in v) return v.error;
        if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(String(v.row.IPAddress))) return this.bad('IPAddress must be an IP address');
        const AssetID = ++this.seq;
        const now = new Date().toISOString();
        const asset = {
          WorkgroupID: wg.ID,
          AssetID,
          AssetName: v.row.AssetName ?? '',
          AssetType: v.row.AssetType ?? 'Server',
          DnsName: v.row.DnsName ?? '',
          DomainName: v.row.DomainName ?? '',
          IPAddress: v.row.IPAddress,
          OperatingSystem: v.row.OperatingSystem ?? '',
          CreateDate: now,
          LastUpdateDate: now,
          Description: v.row.Description ?? '',
        };
        this.assets.set(AssetID, asset);
        return { status: 201, body: asset };
      }
    }
    if (a === 'Assets' && seg.length === 2 && r.method === 'DELETE') {
      if (!this.assets.has(n(1))) return { status: 404, body: 'Asset not found' };
      for (const [id, s] of this.systems) if (s.AssetID === n(1)) this.deleteSystem(id);
      this.assets.delete(n(1));
      return { status: 200 };
    }
    if (a === 'Assets' && c === 'ManagedSystems' && seg.length === 3) {
      const asset = this.assets.get(n(1));
      if (!asset) return { status: 404, body: 'Asset not found' };
      const existing = [...this.systems.values()].find((s) => s.AssetID === asset.AssetID);
      if (r.method === 'GET') return existing ? { status: 200, body: existing } : { status: 404, body: 'Managed system not found' };
      if (r.method === 'POST') return this.createSystem(r, asset, existing);
    }
    if (a === 'ManagedSystems' && seg.length === 2) {
      const s = this.systems.get(n(1));
      if (!s) return { status: 404, body: 'Managed system not found' };
      if (r.method === 'GET') return { status: 200, body: s };
      if (r.method === 'DELETE') return (this.deleteSystem(s.ManagedSystemID as number), { status: 200 });
    }
    if (a === 'ManagedSystems' && c === 'ManagedAccounts' && seg.length === 3) {
      const s = this.systems.get(n(1));
      if (!s) return { status: 404, body: 'Managed system not found' };
      if (r.method === 'GET') return list(this.accounts, (x) => x.SystemId === s.ManagedSystemID);
      if (r.method === 'POST') {
        const v = this.validate(r.json, PS_FIELDS.managedAccount);
        if ('error' in v) return v.error;
        if (!v.row.AutoManagementFlag && !v.row.Password) return this.bad('Password is required when AutoManagementFlag is false');
        if (v.row.AutoManagementFlag && !s.FunctionalAccountID)
          return this.bad('AutoManagementFlag requires the managed system to have a functional account');
        if (
          [...this.accounts.values()].some(
            (x) => x.SystemId === s.ManagedSystemID && String(x.AccountName).toLowerCase() === String(v.row.AccountName).toLowerCase(),
          )
        )
          return { status: 409, body: 'The account already exists' };
        const ManagedAccountID = ++this.seq;
        const acct = {
          ManagedAccountID,
          ManagedSystemID: s.ManagedSystemID,
          SystemId: s.ManagedSystemID,
          AccountName: v.row.AccountName,
          PlatformID: s.PlatformID,
          secret: v.row.Password ?? null,
        };
        this.accounts.set(ManagedAccountID, acct);
        const { secret: _s, SystemId: _i, ...shown } = acct;
        return { status: 201, body: shown };
      }
    }
    if (a === 'ManagedAccounts' && seg.length === 2 && r.method === 'DELETE') {
      return this.accounts.delete(n(1)) ? { status: 200 } : { status: 404, body: 'Managed account not found' };
    }
    if (a === 'FunctionalAccounts' && seg.length === 1) {
      if (r.method === 'GET') return { status: 200, body: [...this.functionalAccounts.values()].map(({ secret: _s, ...x }) => x) };
      if (r.method === 'POST') {
        const v = this.validate(r.json, PS_FIELDS.functionalAccount);
        if ('error' in v) return v.error;
        if (!PLATFORMS.some((p) => p.PlatformID === v.row.PlatformID)) return this.bad('PlatformID is not a valid platform');
        const FunctionalAccountID = ++this.seq;
        const fa = {
          FunctionalAccountID,
          PlatformID: v.row.PlatformID,
          DomainName: v.row.DomainName ?? '',
          AccountName: v.row.AccountName,
          DisplayName: v.row.DisplayName ?? v.row.AccountName,
          Description: v.row.Description ?? '',
          ElevationCommand: '',
          SystemReferenceCount: 0,
          secret: v.row.Password ?? null,
        };
        this.functionalAccounts.set(FunctionalAccountID, fa);
        const { secret: _s, ...shown } = fa;
        return { status: 201, body: shown };
      }
    }
    if (a === 'FunctionalAccounts' && seg.length === 2 && r.method === 'DELETE') {
      if (!this.functionalAccounts.has(n(1))) return { status: 404, body: 'Functional account not found' };
      if ([...this.systems.values()].some((s) => s.FunctionalAccountID === n(1)))
        return this.bad('The functional account is used by a managed system');
      this.functionalAccounts.delete(n(1));
      return { status: 200 };
    }
    void b;
    return { status: 404, body: 'Not Found' };
  }

  private createSystem(r: Req, asset: Row, existing: Row | undefined): Reply {
    const v = this.validate(r.json, PS_FIELDS.managedSystem);
    if ('error' in v) return v.error;
    const row = v.row;
    if (row.AutoManagementFlag === true && !row.FunctionalAccountID)
      return this.bad('FunctionalAccountID is required when AutoManagementFlag is true');
    if (row.ChangeFrequencyType === 'xdays' && !row.ChangeFrequencyDays)
      return this.bad('ChangeFrequencyDays is required when ChangeFrequencyType is xdays');
    if (row.FunctionalAccountID && !this.functionalAccounts.has(row.FunctionalAccountID as number))
      return this.bad('FunctionalAccountID is not a functional account');
    if (!PLATFORMS.some((p) => p.PlatformID === row.PlatformID)) return this.bad('PlatformID is not a valid platform');
    if (existing) return { status: 409, body: 'The asset is already a managed system' };
    const ManagedSystemID = ++this.seq;
    const sys = {
      ManagedSystemID,
      EntityTypeID: 1,
      AssetID: asset.AssetID,
      WorkgroupID: asset.WorkgroupID,
      HostName: asset.AssetName,
      DnsName: asset.DnsName,
      IPAddress: asset.IPAddress,
      SystemName: asset.AssetName,
      ...row,
    };
    this.systems.set(ManagedSystemID, sys);
    if (row.FunctionalAccountID) (this.functionalAccounts.get(row.FunctionalAccountID as number)!.SystemReferenceCount as number)++;
    return { status: 201, body: sys };
  }

  private deleteSystem(id: number) {
    const s = this.systems.get(id);
    if (!s) return;
    for (const [k, acct] of this.accounts) if (acct.SystemId === id) this.accounts.delete(k);
    const fa = s.FunctionalAccountID ? this.functionalAccounts.get(s.FunctionalAccountID as number) : undefined;
    if (fa) (fa.SystemReferenceCount as number)--;
    this.systems.delete(id);
  }
}
