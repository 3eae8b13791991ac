/**
 * Step 5 of wiring (./wire): in Password Safe, the POV's workgroup, a functional account per OS,
 * then per VM its asset, managed system and managed accounts, each found before it is created.
 */
import { AppError } from '../../../shared/contract/errors';
import type { PamJob } from './types';
import type { PamVm, Step, WireDeps } from './wire-types';

const PLATFORM: Record<'linux' | 'windows', RegExp> = { linux: /^linux$/i, windows: /^windows$/i };

export async function onboard(d: WireDeps, job: PamJob, tag: string, vms: PamVm[], step: Step) {
  const { repo, pov } = d;
  const ps = d.ps!;
  const check = d.checkpoint ?? (() => {});
  let wg = (await ps.workgroups()).find((w) => w.Name.toLowerCase() === tag.toLowerCase());
  if (!wg) {
    wg = await ps.createWorkgroup(tag);
    check('created:workgroup');
    job.log(`created Password Safe workgroup ${tag}`);
  }
  repo.mark(pov.id, 'workgroup', '', { state: 'done', remote_id: String(wg.ID), detail: tag });
  const platforms = await ps.platforms();
  const platformId = (os: 'linux' | 'windows') =>
    platforms.find((p) => PLATFORM[os].test(p.Name) || PLATFORM[os].test(p.ShortName ?? ''))?.PlatformID ?? null;

  const fa: Partial<Record<'linux' | 'windows', number>> = {};
  for (const os of ['linux', 'windows'] as const) {
    const want = d.functionalAccounts[os];
    const pid = platformId(os);
    if (!want || !pid || !vms.some((v) => v.os === os)) continue;
    await step('functional_account', os, `functional account (${os})`, async () => {
      const display = `${tag} ${os}`;
      let acct = (await ps.functionalAccounts()).find((a) => a.DisplayName === display && a.PlatformID === pid);
      if (!acct) {
        acct = await ps.createFunctionalAccount({
          PlatformID: pid,
          AccountName: want.accountName,
          DisplayName: display,
          Description: `POV Desk: ${pov.name}`,
          ...(want.password ? { Password: want.password } : {}),
        });
        check('created:functional_account');
      }
      fa[os] = acct.FunctionalAccountID;
      repo.mark(pov.id, 'functional_account', os, { state: 'done', remote_id: String(acct.FunctionalAccountID), detail: want.accountName });
    });
  }

  const assets = await ps.assets(wg.ID);
  let answered: string | null = null;
  for (const vm of vms) {
    const os = vm.os as 'linux' | 'windows';
    await step('asset', vm.vmId, `Password Safe onboarding of ${vm.name}`, async () => {
      const pid = platformId(os);
      if (!pid) throw new AppError('not_found', `Password Safe lists no ${os} platform`);
      let asset = assets.find((a) => a.AssetName.toLowerCase() === vm.name.toLowerCase() && a.IPAddress === vm.ip);
      if (!asset) {
        asset = await ps.createAsset(wg!.ID, {
          IPAddress: vm.ip!,
          AssetName: vm.name,
          OperatingSystem: os === 'linux' ? 'Linux' : 'Windows',
          Description: `POV Desk: ${pov.name}`,
        });
        check('created:asset');
      }
      repo.mark(pov.id, 'asset', vm.vmId, { state: 'done', remote_id: String(asset.AssetID), detail: vm.ip });
      let sys = await ps.managedSystemOf(asset.AssetID);
      if (!sys) {
        const auto = fa[os] !== undefined;
        sys = await ps.createManagedSystem(asset.AssetID, {
          PlatformID: pid,
          ContactEmail: '',
          Description: `POV Desk: ${pov.name}`,
          ...(os === 'linux' ? { Port: 22 } : {}),
          ReleaseDuration: 120,
          MaxReleaseDuration: 525600,
          ISAReleaseDuration: 120,
          AutoManagementFlag: auto,
          ...(auto ? { FunctionalAccountID: fa[os] } : {}),
          ChangeFrequencyType: 'first',
          ChangeTime: '23:30',
          RemoteClientType: 'None',
        });
        check('created:managed_system');
      }
      repo.mark(pov.id, 'managed_system', vm.vmId, { state: 'done', remote_id: String(sys.ManagedSystemID), detail: auto(fa[os]) });
      if (!answered && (await ps.managedSystem(sys.ManagedSystemID))) answered = vm.name;
      const listed = d.managedAccounts[os];
      if (listed.length && fa[os] === undefined) {
        repo.mark(pov.id, 'managed_account', `${vm.vmId}/*`, {
          state: 'skipped',
          error: `managed accounts need a functional account for ${os} to auto-manage them`,
        });
        return;
      }
      const existing = listed.length ? await ps.managedAccounts(sys.ManagedSystemID) : [];
      for (const name of listed) {
        let acct = existing.find((a) => a.AccountName.toLowerCase() === name.toLowerCase());
        if (!acct) {
          acct = await ps.createManagedAccount(sys.ManagedSystemID, {
            AccountName: name,
            AutoManagementFlag: true,
            Description: `POV Desk: ${pov.name}`,
          });
          check('created:managed_account');
        }
        repo.mark(pov.id, 'managed_account', `${vm.vmId}/${name}`, {
          state: 'done',
          remote_id: String(acct.ManagedAccountID ?? acct.AccountId ?? ''),
          detail: name,
        });
      }
    });
  }
  // The broker has no health API: Password Safe answering for a managed system behind it is the signal.
  const broker = repo.artifact(pov.id, 'broker');
  if (answered && broker && broker.state === 'waiting' && broker.remote_id) {
    repo.mark(pov.id, 'broker', '', {
      state: 'done',
      error: null,
      detail: `${broker.detail ?? ''}; Password Safe answers for ${answered}`,
    });
  }
}

function auto(id: number | undefined): string {
  return id === undefined ? 'not auto-managed (no functional account)' : `auto-managed by functional account ${id}`;
}
