import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCore } from '../../main/core/create';
import { insertPov, updatePov } from '../../main/services/pov/repo';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { openDatabase } from '../../main/services/store/db';
import { tempHome } from '../foundation/helpers';

const memory = () => new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null });

/**
 * The app as it starts (role 'app', the real wiring in createCore): a POV whose 7 d, 3 d and
 * 24 h steps all passed while the app was closed gets one warning, the 24 h one, shortly after
 * start, and a second start fires nothing.
 */
describe('the ladder at start', () => {
  it('fires only the latest missed step, once, across two starts', async () => {
    const home = tempHome();
    const db = openDatabase(join(home, 'povdesk.db'));
    const at = new Date().toISOString();
    insertPov(db, { id: 'pov-1', name: 'Closed laptop', templateId: '500', templateName: 'T', envName: 'x', at });
    updatePov(db, 'pov-1', { state: 'active', env_id: '1001', auto_delete_at: new Date(Date.now() + 20 * 3600_000).toISOString() }, at);
    db.close();

    const ladder = async () => {
      const core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'app', secrets: memory() });
      await new Promise((r) => setTimeout(r, 2600)); // the first ladder pass runs 2 s after start
      const r = (await core.dispatcher.call('notify.list', {}, { transport: 'test' })) as { items: { title: string; kind: string }[] };
      const steps = core.base.db.prepare('SELECT step, outcome FROM ladder_steps ORDER BY step').all();
      await core.close();
      return { titles: r.items.filter((n) => n.kind === 'ladder').map((n) => n.title), steps };
    };
    const first = await ladder();
    expect(first.titles).toEqual([expect.stringMatching(/^POV "Closed laptop" is deleted in (19|20) hours$/)]);
    expect(first.steps).toEqual([
      { step: '24h', outcome: 'fired' },
      { step: '3d', outcome: 'skipped' },
      { step: '7d', outcome: 'skipped' },
    ]);
    const second = await ladder();
    expect(second.titles).toHaveLength(1);
  }, 20_000);
});
