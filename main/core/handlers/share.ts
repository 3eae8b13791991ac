import type { notifyMethods } from '../../../shared/contract/notify';
import type { shareMethods } from '../../../shared/contract/share';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function shareHandlers({
  shares,
  notify,
}: Pick<Services, 'shares' | 'notify'>): DomainHandlers<typeof shareMethods & typeof notifyMethods> {
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
