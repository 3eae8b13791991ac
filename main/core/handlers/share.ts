import type { notifyMethods } from '../../../shared/contract/notify';
import type { shareMethods } from '../../../shared/contract/share';
import { Ladder, nextStep } from '../../services/notify/ladder';
import { NotificationService } from '../../services/notify/service';
import { AutoDelete } from '../../services/share/auto-delete';
import { ShareService } from '../../services/share/service';
import { shareApi } from '../../services/skytap/share-api';
import type { Base } from '../base';
import { povServiceFor } from './pov';
import { skytapClientFor, type DomainHandlers } from './skytap';
import { JOB_KIND } from '../../../shared/contract/job-kinds';

export const LADDER_INTERVAL_MS = 60_000;

export interface ShareWorld {
  shares: ShareService;
  autoDelete: AutoDelete;
  notify: NotificationService;
  ladder: Ladder;
}

const worlds = new WeakMap<Base, ShareWorld>();

/**
 * The share links, auto-delete, ladder and notification services of a Base, built once, and
 * hooked into the one PovService (create arms the schedule; each reconcile pass checks schedules
 * and portals; pov.get shows the next warning). In the app, the ladder runs every minute and once
 * at start, so a step missed while the app was closed fires then (only the latest).
 */
export function shareWorldFor(base: Base, opts: { now?: () => Date } = {}): ShareWorld {
  let w = worlds.get(base);
  if (w) return w;
  const now = opts.now ?? (() => new Date());
  const skytap = async () => shareApi(await skytapClientFor(base));
  const notify = new NotificationService({
    db: base.db,
    settings: base.settings,
    now,
    publish: (n) => base.hub.publish('notify.event', n.id, n),
  });
  const shares = new ShareService({ db: base.db, secrets: base.secrets, skytap, now, log: base.log });
  const autoDelete = new AutoDelete({ db: base.db, skytap, shares, notify, now });
  const ladder = new Ladder({ db: base.db, notify, now });
  w = { shares, autoDelete, notify, ladder };
  worlds.set(base, w);

  povServiceFor(base).setShareHooks({
    armAutoDelete: async (povId) => {
      await autoDelete.arm(povId);
      ladder.tick(); // a POV created close to its deletion warns at once, not a minute later
    },
    onReconcileRead: async (envs, ctx) => {
      const r = await autoDelete.sweep(envs);
      if (r.notArmed.length) ctx.log(`auto-delete not armed for ${r.notArmed.length} POV(s)`, 'warn');
      if (r.portalsGone) ctx.log(`${r.portalsGone} share link(s) no longer in Skytap: marked gone`);
    },
    autoDeleteAtFor: (asked) => (asked === undefined ? autoDelete.defaultAt() : autoDelete.check(asked)).toISOString(),
    moveAutoDelete: async (povId, at) => {
      await autoDelete.set(povId, at);
      ladder.tick();
    },
    ladderView: (povId, at) => ({
      nextWarning: nextStep(now(), new Date(at), notify.settings().ladderHours),
      lastWarning: ladder.lastFired(povId, at),
    }),
  });
  base.jobs.onChange((job) => {
    notify.onJob(job);
    // a destroy or a sweep that found the environment gone: its links and their passwords go too
    if (job.state === 'succeeded' && (job.kind === JOB_KIND.povDestroy || job.kind === JOB_KIND.reconcile)) {
      shares.forgetDestroyed().catch((err: unknown) => base.log.warn('could not forget share passwords', { error: (err as Error).message }));
    }
  });
  if (base.role === 'app') {
    const tick = () => {
      try {
        ladder.tick();
      } catch (err) {
        base.log.warn('auto-delete ladder pass failed', { error: (err as Error).message });
      }
    };
    const first = setTimeout(tick, 2000);
    const every = setInterval(tick, LADDER_INTERVAL_MS);
    first.unref?.();
    every.unref?.();
    base.onClose(() => {
      clearTimeout(first);
      clearInterval(every);
    });
  }
  return w;
}

export function shareHandlers(base: Base): DomainHandlers<typeof shareMethods & typeof notifyMethods> {
  const { shares, notify } = shareWorldFor(base);
  return {
    'share.create': async (args) => shares.create(args),
    'share.list': async (args) => shares.list(args.povId),
    'share.extend': async (args) => ({ share: await shares.extend(args.povId, args.shareId, args.expiresAt) }),
    'share.rotatePassword': async (args) => shares.rotatePassword(args.povId, args.shareId),
    'share.password': async (args) => ({ password: await shares.password(args.povId, args.shareId) }),
    'share.revoke': async (args) => {
      await shares.revoke(args.povId, args.shareId);
      return { ok: true as const };
    },
    'notify.list': async (args) => notify.list(args.limit ?? 100),
    'notify.markRead': async (args) => {
      notify.markRead(args.ids);
      return { ok: true as const };
    },
    'notify.getSettings': async () => notify.settings(),
    'notify.setSettings': async (args) => notify.setSettings(args),
  };
}
