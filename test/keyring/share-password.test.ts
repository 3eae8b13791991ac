import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { passwordAccount } from '../../main/services/share/password';
import { openSecretStore } from '../../main/services/secrets/keytar';
import { createPov, DAY, shareWorld, type ShareTestWorld } from '../share/helpers';

let w: ShareTestWorld;
afterEach(async () => {
  await w?.close();
});

describe('share link passwords in the real keychain (gnome-keyring over D-Bus)', () => {
  it('is kept under the POV and portal, read back by Show, removed by Revoke, and in no file of the data directory', async () => {
    const secrets = await openSecretStore();
    expect(secrets.status()).toMatchObject({ backend: 'keytar', available: true });
    w = await shareWorld({ secrets });
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 7 * DAY));
    const { share, password } = await w.call('share.create', { povId });
    const account = passwordAccount(povId, share.shareId);
    expect(execFileSync('secret-tool', ['lookup', 'service', 'povdesk', 'account', account]).toString()).toBe(password);
    expect((await w.call('share.password', { povId, shareId: share.shareId })).password).toBe(password);
    w.db.pragma('wal_checkpoint(FULL)');
    // Every regular file under the core's home: the database and its WAL, logs/, owner.json.
    const files = (readdirSync(w.dir, { recursive: true }) as string[]).filter((f) => statSync(join(w.dir, f)).isFile());
    expect(files.length).toBeGreaterThan(1);
    for (const f of files) expect(readFileSync(join(w.dir, f)).includes(Buffer.from(password)), f).toBe(false);
    await w.call('share.revoke', { povId, shareId: share.shareId });
    expect(await secrets.get(account)).toBeNull();
  }, 30_000);
});
