import { useState } from 'react';
import type { Args, Result } from '../../../../shared/contract';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';

type View = Result<'pam.status'>['tenants'];
type TestResult = Result<'pam.test'>;
const PRODUCTS = [
  ['pra', 'PRA'],
  ['passwordSafe', 'Password Safe'],
  ['entitle', 'Entitle'],
] as const;

const list = (s: string) =>
  s
    .split(/[,\s]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * The POV's tenants: plain values are shown, secrets are write-only ("set" once saved; blank
 * keeps what the keychain holds). Test reads the SAVED values, like Skytap's Test connection.
 */
export function TenantsForm({ povId, view, onSaved }: { povId: string; view: View; onSaved(): void }) {
  const [f, setF] = useState({
    praSite: view.pra?.site ?? '',
    praClientId: view.pra?.clientId ?? '',
    praSecret: '',
    psUrl: view.passwordSafe?.url ?? '',
    psRunAs: view.passwordSafe?.runAs ?? '',
    psKey: '',
    psRunAsPassword: '',
    psClientId: view.passwordSafe?.clientId ?? '',
    psClientSecret: '',
    entitleUrl: view.entitle?.url ?? '',
    entitleToken: '',
    brokerKey: '',
    faLinux: view.functionalAccounts.linux ?? '',
    faLinuxPw: '',
    faWindows: view.functionalAccounts.windows ?? '',
    faWindowsPw: '',
    maLinux: view.managedAccounts.linux.join(', '),
    maWindows: view.managedAccounts.windows.join(', '),
  });
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [tests, setTests] = useState<Partial<Record<string, TestResult | string>>>({});
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const opt = (v: string) => (v ? v : undefined);

  const save = async () => {
    setError(null);
    setSaved(false);
    const args: Args<'pam.saveTenants'> = { povId };
    if (f.praSite) args.pra = { site: f.praSite, clientId: f.praClientId, ...(f.praSecret ? { clientSecret: f.praSecret } : {}) };
    if (f.psUrl) {
      args.passwordSafe = f.psClientId
        ? { url: f.psUrl, clientId: f.psClientId, clientSecret: opt(f.psClientSecret) }
        : { url: f.psUrl, runAs: f.psRunAs, apiKey: opt(f.psKey), runAsPassword: opt(f.psRunAsPassword) };
    }
    if (f.entitleUrl || f.entitleToken) args.entitle = { url: opt(f.entitleUrl), token: opt(f.entitleToken) };
    if (f.brokerKey) args.brokerInstallKey = f.brokerKey;
    const fa: NonNullable<Args<'pam.saveTenants'>['functionalAccounts']> = {};
    if (f.faLinux) fa.linux = { accountName: f.faLinux, password: opt(f.faLinuxPw) };
    if (f.faWindows) fa.windows = { accountName: f.faWindows, password: opt(f.faWindowsPw) };
    if (fa.linux || fa.windows) args.functionalAccounts = fa;
    args.managedAccounts = { linux: list(f.maLinux), windows: list(f.maWindows) };
    try {
      await api.call('pam.saveTenants', args);
      setF({
        ...f,
        praSecret: '',
        psKey: '',
        psRunAsPassword: '',
        psClientSecret: '',
        entitleToken: '',
        brokerKey: '',
        faLinuxPw: '',
        faWindowsPw: '',
      });
      setSaved(true);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const test = async (product: (typeof PRODUCTS)[number][0]) => {
    setTests({ ...tests, [product]: 'testing…' });
    try {
      const r = await api.call('pam.test', { povId, product });
      setTests((t) => ({ ...t, [product]: r }));
    } catch (e) {
      setTests((t) => ({ ...t, [product]: errorText(e) }));
    }
  };

  const field = (label: string, k: keyof typeof f, opts: { secret?: string; placeholder?: string } = {}) => (
    <label className="small tenant-field">
      <span>
        {label}
        {opts.secret !== undefined && <span className="muted"> ({opts.secret})</span>}
      </span>
      <input
        type={opts.secret !== undefined ? 'password' : 'text'}
        value={f[k]}
        onChange={set(k)}
        placeholder={opts.placeholder}
        aria-label={label}
        autoComplete="off"
      />
    </label>
  );
  const setText = (isSet: boolean | undefined) => (isSet ? 'set; blank keeps it' : 'not set');

  return (
    <form className="panel tenants-form" aria-label="Tenants" onSubmit={(e) => (e.preventDefault(), void save())}>
      <h3>Tenants</h3>
      <fieldset>
        <legend>PRA</legend>
        {field('PRA site', 'praSite', { placeholder: 'https://acme.beyondtrustcloud.com' })}
        {field('API client id', 'praClientId')}
        {field('API client secret', 'praSecret', { secret: setText(view.pra?.secretSet) })}
      </fieldset>
      <fieldset>
        <legend>Password Safe (API key with run-as, or OAuth client)</legend>
        {field('Password Safe URL', 'psUrl', { placeholder: 'https://acme.ps.beyondtrustcloud.com' })}
        {field('Run-as user', 'psRunAs')}
        {field('API key', 'psKey', { secret: setText(view.passwordSafe?.auth === 'ps-auth' && view.passwordSafe.secretSet) })}
        {field('Run-as password', 'psRunAsPassword', { secret: 'only if the registration requires it' })}
        {field('OAuth client id', 'psClientId')}
        {field('OAuth client secret', 'psClientSecret', {
          secret: setText(view.passwordSafe?.auth === 'oauth' && view.passwordSafe.secretSet),
        })}
      </fieldset>
      <fieldset>
        <legend>Entitle (optional)</legend>
        {field('Entitle API URL', 'entitleUrl', { placeholder: 'https://api.entitle.io' })}
        {field('Entitle API token', 'entitleToken', { secret: setText(view.entitle?.tokenSet) })}
      </fieldset>
      <fieldset>
        <legend>Resource Broker and accounts</legend>
        {field('Resource Broker install key', 'brokerKey', { secret: setText(view.brokerInstallKeySet) })}
        {field('Linux functional account', 'faLinux', { placeholder: 'root' })}
        {field('Linux functional account password', 'faLinuxPw', { secret: 'write-only' })}
        {field('Windows functional account', 'faWindows', { placeholder: 'Administrator' })}
        {field('Windows functional account password', 'faWindowsPw', { secret: 'write-only' })}
        {field('Linux managed accounts (comma-separated)', 'maLinux')}
        {field('Windows managed accounts (comma-separated)', 'maWindows')}
      </fieldset>
      <p>
        <button type="submit">Save tenants</button> {saved && <span className="ok small">Saved.</span>}
      </p>
      <ErrorAlert error={error} />
      <div className="row tenant-tests">
        {PRODUCTS.map(([p, name]) => (
          <button key={p} type="button" onClick={() => void test(p)}>
            Test {name}
          </button>
        ))}
      </div>
      <div className="small">
        {PRODUCTS.map(([p, name]) => {
          const r = tests[p];
          if (!r) return null;
          return (
            <p key={p}>
              <strong>{name}: </strong>
              {typeof r === 'string' ? (
                <span className="muted">{r}</span>
              ) : (
                <span className={r.good ? 'ok' : 'error'} aria-label={`${name} test result`}>
                  {r.outcome}: {r.message}
                  {r.remedy ? ` ${r.remedy}` : ''}
                </span>
              )}
            </p>
          );
        })}
      </div>
    </form>
  );
}
