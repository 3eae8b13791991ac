import { AppError, toWireError } from '../../../shared/contract/errors';
import { GATEWAY_CONTAINER, jumpGroupName, type WireDeps } from './wire';
import { povTag, type PamJob } from './types';

/**
 * Removes everything the wiring made, in the order that leaves nothing behind: Entitle's resource,
 * Password Safe (accounts → systems → assets → functional accounts → workgroup), the Gateway
 * container, then the Jumpoint and the Jump Group in PRA (each DELETE cascades to its jump items).
 * What to delete is looked up in the tenant by tag as well as in this database, so an object
 * created just before a crash (and never recorded) goes too. Every part is tried; the ones that
 * failed are named in the error at the end and stay recorded for the next run.
 */
export type UnwireDeps = Pick<WireDeps, 'repo' | 'pov' | 'pra' | 'ps' | 'entitle' | 'agent' | 'checkpoint'>;

export async function unwirePov(d: UnwireDeps, job: PamJob): Promise<{ removed: string[] }> {
  const { repo, pov } = d;
  const tag = povTag(pov.id);
  const check = d.checkpoint ?? (() => {});
  const removed: string[] = [];
  const problems: string[] = [];
  const part = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      if (job.signal.aborted || (err instanceof AppError && err.code === 'cancelled')) throw err;
      const why = toWireError(err).message;
      problems.push(`${what}: ${why}`);
      job.log(`could not remove ${what}: ${why}`, 'warn');
    }
  };

  job.progress('Entitle', 0.1);
  if (d.entitle) {
    await part('the Entitle resource', async () => {
      const known = repo.artifact(pov.id, 'entitle_resource')?.remote_id;
      let id = known ?? null;
      if (!id) {
        const integ = await d.entitle!.praIntegration();
        id = integ ? ((await d.entitle!.findResource(integ.id, jumpGroupName(pov)))?.id ?? null) : null;
      }
      if (id) {
        await d.entitle!.deleteResource(id);
        check('deleted:entitle_resource');
        removed.push(`Entitle resource ${id}`);
      }
      repo.forget(pov.id, 'entitle_resource');
    });
  }

  job.progress('Password Safe', 0.3);
  if (d.ps) {
    await part('the Password Safe objects', () =>
      d.ps!.session(async (ps) => {
        const wg = (await ps.workgroups()).find((w) => w.Name.toLowerCase() === tag.toLowerCase());
        const assets = wg ? await ps.assets(wg.ID) : [];
        // Everything in the POV's own workgroup is the POV's.
        for (const a of assets) {
          const sys = await ps.managedSystemOf(a.AssetID);
          if (sys) {
            for (const acct of await ps.managedAccounts(sys.ManagedSystemID)) {
              const accountId = acct.ManagedAccountID ?? acct.AccountId;
              if (accountId !== undefined) await ps.remove(`ManagedAccounts/${accountId}`);
            }
            await ps.remove(`ManagedSystems/${sys.ManagedSystemID}`);
            check('deleted:managed_system');
          }
          await ps.remove(`Assets/${a.AssetID}`);
          check('deleted:asset');
          removed.push(`asset ${a.AssetName}`);
        }
        for (const fa of (await ps.functionalAccounts()).filter((f) => f.DisplayName?.startsWith(`${tag} `))) {
          await ps.remove(`FunctionalAccounts/${fa.FunctionalAccountID}`);
          removed.push(`functional account ${fa.DisplayName}`);
        }
        if (wg) {
          await ps.remove(`Workgroups/${wg.ID}`);
          check('deleted:workgroup');
          removed.push(`workgroup ${wg.Name}`);
        }
        for (const k of ['managed_account', 'managed_system', 'asset', 'functional_account'] as const)
          for (const a of repo.artifacts(pov.id, k)) repo.forget(pov.id, k, a.key);
        repo.forget(pov.id, 'workgroup');
      }),
    );
  }

  job.progress('Gateway container', 0.5);
  const container = repo.artifact(pov.id, 'container');
  if (container && container.state !== 'skipped') {
    await part('the Gateway container', async () => {
      if (d.agent && pov.agentId) {
        await d.agent.removeContainer(pov.agentId, GATEWAY_CONTAINER, job.signal);
        removed.push('Gateway container');
      } else {
        job.log('the control node has no enrolled agent; the Gateway container goes with the environment', 'warn');
      }
      repo.forget(pov.id, 'container');
    });
  }
  repo.forget(pov.id, 'broker');

  job.progress('PRA', 0.7);
  if (d.pra) {
    await part('the POV Gateway (Jumpoint)', async () => {
      const j = await d.pra!.findJumpoint(tag);
      if (j) {
        await d.pra!.remove(`/jumpoint/${j.id}`);
        check('deleted:jumpoint');
        removed.push(`Jumpoint ${j.name}`);
      }
      repo.forget(pov.id, 'jumpoint');
    });
    await part('the jump group', async () => {
      const g = await d.pra!.findJumpGroup(tag);
      if (g) {
        await d.pra!.remove(`/jump-group/${g.id}`);
        removed.push(`jump group ${g.name}`);
      }
      repo.forget(pov.id, 'jump_group');
      for (const a of repo.artifacts(pov.id, 'jump_item')) repo.forget(pov.id, 'jump_item', a.key);
    });
  }
  job.progress('done', 1);
  if (problems.length)
    throw new AppError(
      'unavailable',
      `unwiring left ${problems.length} part(s): ${problems.join(' | ')}; press Unwire again once the cause is fixed`,
    );
  return { removed };
}
