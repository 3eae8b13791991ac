import { ControlPlaneDouble } from '../support/control-plane-double';
import { AppError } from '../../shared/contract';
import type { Base } from '../../main/core/base';
import { guest } from '../control-node/harness';
import { EntitleDouble } from '../pam-doubles/entitle-double';
import { PasswordSafeDouble } from '../pam-doubles/password-safe-double';
import { PraDouble } from '../pam-doubles/pra-double';
import { coreWorld, type CoreWorld } from '../pov/helpers';
import type { VmSeed } from '../skytap-emulator/state';

export const SECRETS = {
  praSecret: 'pra-client-secret-5c1f0e6a9b',
  psKey: 'ps-api-key-0d9a7be44f11c2',
  psRunAsPassword: 'ps-runas-pw-77f1e0',
  entitleToken: '', // the double's own
  brokerKey: 'broker-install-key-8e2b6d90',
  linuxPw: 'linux-fa-pw-3a9c1f',
  windowsPw: 'windows-fa-pw-b7e2d4',
};

export interface PamWorld {
  /** The real core in front of the emulator; `w.call` goes through its Dispatcher. */
  w: CoreWorld;
  cp: ControlPlaneDouble;
  pra: PraDouble;
  ps: PasswordSafeDouble;
  en: EntitleDouble;
  base: Base;
  povId: string;
  logFile: string;
  crashAt: { step: string | null };
  close(): Promise<void>;
}

/**
 * The real core over SQLite, the Skytap emulator, the control-plane double and the three
 * tenant doubles: a POV from a template with one Linux control node and one Windows VM, created
 * and its control node enrolled, tenants saved. `crashAt.step` makes the wiring stop dead at that
 * checkpoint (as a killed process would).
 */
export async function pamWorld(
  opts: {
    tenantsBeforeEnrol?: boolean;
    /** what the app is given as the PRA site and Entitle URL, in front of the doubles (a validating proxy) */
    front?: (pra: PraDouble, en: EntitleDouble) => Promise<{ pra: string; entitle: string }>;
    /** The Windows VM beside the control node (default: win-broker, Windows Server 2019, the default network). */
    windowsVm?: VmSeed;
  } = {},
): Promise<PamWorld> {
  const crashAt = { step: null as string | null };
  const w = await coreWorld({
    env: { POVDESK_SKYTAP_POLL_MS: '20' },
    tuning: {
      controlNode: { enrolPollMs: 30 },
      pam: {
        connectPollMs: 20,
        checkpoint: (step) => {
          if (step === crashAt.step) {
            crashAt.step = null;
            throw new AppError('cancelled', `crash at ${step}`);
          }
        },
      },
    },
  });
  const cp = await new ControlPlaneDouble().start();
  const pra = await new PraDouble().start();
  const ps = await new PasswordSafeDouble().start();
  const en = await new EntitleDouble().start();
  pra.addApiAccount('povdesk-api', SECRETS.praSecret);
  ps.apiKeys.set(SECRETS.psKey, { runAs: 'povdesk', password: SECRETS.psRunAsPassword });
  en.addIntegration('Acme PRA', 'BeyondTrust Privileged Remote Access');
  en.addIntegration('Acme GitHub', 'GitHub');
  const urls = opts.front ? await opts.front(pra, en) : { pra: pra.url, entitle: en.url };
  const base = w.base;
  const log = base.log;
  await w.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
  const tpl = w.emu.state.addTemplate({
    name: 'PAM two VMs',
    vms: [{ name: 'control-node', guestOS: 'ubuntu-64' }, opts.windowsVm ?? { name: 'win-broker', guestOS: 'windows2019srv-64' }],
  });
  const created = await w.call('pov.create', { templateId: tpl.id, name: 'Acme PAM' });
  const provision = await w.jobs.wait(created.jobId);
  if (provision.state !== 'succeeded') throw new Error(`provision ${provision.state}: ${JSON.stringify(provision.error)}`);
  const povId = (await w.call('pov.list', {})).povs[0]!.id;
  const saveTenants = async () => {
    await w.call('pam.saveSettings', {
      gatewayImage: 'registry.example.test/bt/jumpoint:25.2',
      gatewayArgs: ['--restart=unless-stopped'],
      connectTimeoutSec: 10,
    });
    await w.call('pam.saveTenants', {
      povId,
      pra: { site: urls.pra, clientId: 'povdesk-api', clientSecret: SECRETS.praSecret },
      passwordSafe: { url: ps.url, runAs: 'povdesk', apiKey: SECRETS.psKey, runAsPassword: SECRETS.psRunAsPassword },
      entitle: { url: urls.entitle, token: en.token },
      brokerInstallKey: SECRETS.brokerKey,
      functionalAccounts: {
        linux: { accountName: 'root', password: SECRETS.linuxPw },
        windows: { accountName: 'Administrator', password: SECRETS.windowsPw },
      },
      managedAccounts: { linux: ['svc-demo'], windows: ['povadmin'] },
    });
  };
  // The Jumpoint container, once running on the control node, checks in with PRA.
  const cnIp = (w.db.prepare("SELECT ip FROM pov_vms WHERE pov_id = ? AND name = 'control-node'").get(povId) as { ip: string }).ip;
  cp.onContainer = (_agent, _name, env) => void pra.checkIn(env.DEPLOY_KEY!, { hostname: 'control-node', private_ip: cnIp });
  if (opts.tenantsBeforeEnrol) await saveTenants();
  const stopGuest = guest(w, cp, povId);
  const install = w.db.prepare("SELECT id FROM jobs WHERE kind = 'pov.installControlNode' AND subject = ?").get(povId) as { id: string };
  const enrolled = await w.jobs.wait(install.id);
  stopGuest();
  if (enrolled.state !== 'succeeded') throw new Error(`control node ${enrolled.state}`);

  if (!opts.tenantsBeforeEnrol) await saveTenants();
  return {
    w,
    cp,
    pra,
    ps,
    en,
    base,
    povId,
    logFile: log.file!,
    crashAt,
    async close() {
      await Promise.all([cp.stop(), pra.stop(), ps.stop(), en.stop()]);
      await w.close();
    },
  };
}

/** What exists in the doubles, by type (for "no duplicates" and "nothing left"). */
export function inventory(p: PamWorld) {
  return {
    jumpoints: p.pra.store.jumpoint.size,
    jumpGroups: p.pra.store['jump-group'].size,
    shellJumps: p.pra.store['shell-jump'].size,
    rdps: p.pra.store['remote-rdp'].size,
    workgroups: p.ps.workgroups.size,
    assets: p.ps.assets.size,
    systems: p.ps.systems.size,
    functionalAccounts: p.ps.functionalAccounts.size,
    managedAccounts: p.ps.accounts.size,
    entitleResources: p.en.resources.size,
    containers: p.cp.containers.size,
  };
}
