import type { VmImage, VmRecord } from '../../../shared/contract/vm';
import type { Hub } from '../hub';

/** Where `vm.updated` events go, and whether anyone follows them (the app's stream hub). */
export type VmUpdatesHub = Pick<Hub, 'publish' | 'subscriberCount'>;

/**
 * Publishes `vm.updated` for each VM whose record differs from the one last published (and
 * `vm: null` for one that is gone), from every record the app reads: its own calls, the create
 * job's progress, and — because the vm-manager has no event feed of its own — one re-read of the
 * manager's list (and its images, `vm.imagesUpdated`) every `everyMs` while anyone follows the
 * stream. The Local VMs page only listens.
 */
export class VmUpdates {
  private readonly sent = new Map<string, string>();
  private sentImages: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(
    private readonly hub: VmUpdatesHub,
    /** Reads the manager's VMs and images (each read reports here through sawAll / sawImages). */
    private readonly read: () => Promise<unknown>,
    private readonly everyMs = 2000,
  ) {}

  saw(vm: VmRecord): void {
    const json = JSON.stringify(vm);
    if (this.sent.get(vm.id) === json) return;
    this.sent.set(vm.id, json);
    this.hub.publish('vm.updated', vm.id, { id: vm.id, vm });
  }

  /** The whole list: every record in it, and every VM published before that it no longer has. */
  sawAll(vms: VmRecord[]): void {
    const ids = new Set(vms.map((v) => v.id));
    for (const id of [...this.sent.keys()]) if (!ids.has(id)) this.gone(id);
    for (const v of vms) this.saw(v);
  }

  sawImages(images: VmImage[]): void {
    const json = JSON.stringify(images);
    if (this.sentImages === json) return;
    this.sentImages = json;
    this.hub.publish('vm.imagesUpdated', 'all', { images });
  }

  gone(id: string): void {
    if (this.sent.delete(id)) this.hub.publish('vm.updated', id, { id, vm: null });
  }

  /** Re-reads the list while the stream has followers; stops by itself when the last one leaves. */
  watch(): void {
    if (this.timer || this.closed) return;
    const tick = async () => {
      if (this.closed || this.hub.subscriberCount('vm.updated', '*') === 0) {
        this.timer = null;
        return;
      }
      try {
        await this.read();
      } catch {
        // the manager is unreachable: the page shows that from its own call; try again next time
      }
      if (!this.closed) (this.timer = setTimeout(tick, this.everyMs)).unref?.();
    };
    (this.timer = setTimeout(tick, this.everyMs)).unref?.();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
