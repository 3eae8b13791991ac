import { describe, expect, it } from 'vitest';
import { StreamHub, type Subscriber } from '../../main/core/streams';
import { VmUpdates } from '../../main/services/vm/updates';
import type { VmRecord } from '../../shared/contract/vm';

const vm = (id: string, state: VmRecord['state']) => ({ id, name: `vm-${id}`, state }) as VmRecord;

function follower(hub: StreamHub) {
  const seen: { id: string; state: string | null }[] = [];
  const sub: Subscriber = {
    unacked: new Map(),
    send: (_s, _k, data) => {
      const d = data as { id: string; vm: VmRecord | null };
      seen.push({ id: d.id, state: d.vm?.state ?? null });
    },
  };
  return { seen, stop: hub.subscribe('vm.updated', '*', sub) };
}

/** The app's side of vm.updated: one event per change it reads, and re-reads only while followed. */
describe('vm.updated', () => {
  it('publishes each change once, and a VM missing from the list as gone', () => {
    const hub = new StreamHub();
    const f = follower(hub);
    const u = new VmUpdates(hub, async () => []);
    u.sawAll([vm('a', 'booting'), vm('b', 'ready')]);
    u.sawAll([vm('a', 'booting'), vm('b', 'ready')]);
    u.saw(vm('a', 'ready'));
    u.sawAll([vm('a', 'ready')]);
    u.gone('a');
    u.gone('a');
    expect(f.seen).toEqual([
      { id: 'a', state: 'booting' },
      { id: 'b', state: 'ready' },
      { id: 'a', state: 'ready' },
      { id: 'b', state: null },
      { id: 'a', state: null },
    ]);
  });

  it("re-reads the manager's list while someone follows, and stops when the last one leaves", async () => {
    const hub = new StreamHub();
    let reads = 0;
    let state: VmRecord['state'] = 'booting';
    const u = new VmUpdates(
      hub,
      async () => {
        reads++;
        u.sawAll([vm('a', state)]);
      },
      20,
    );
    u.watch(); // nobody follows: the first tick ends it
    await new Promise((r) => setTimeout(r, 80));
    expect(reads).toBe(0);

    const f = follower(hub);
    u.watch();
    u.watch(); // one loop, however often asked
    await new Promise((r) => setTimeout(r, 50));
    state = 'ready';
    await new Promise((r) => setTimeout(r, 60));
    expect(f.seen).toEqual([
      { id: 'a', state: 'booting' },
      { id: 'a', state: 'ready' },
    ]);
    f.stop();
    await new Promise((r) => setTimeout(r, 50));
    const after = reads;
    await new Promise((r) => setTimeout(r, 100));
    expect(reads).toBe(after);
    expect(after).toBeGreaterThanOrEqual(2);
    expect(after).toBeLessThan(12);
    u.close();
  });
});
