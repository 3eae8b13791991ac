import { chmodSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readManagerKey } from '../../main/services/ssh/vm-key';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { vmSshSignIn } from '../../main/services/vm/local-ssh';
import { ensureManagerKey } from '../../main/vm-manager/exec';
import { needs } from '../support/system';
import { tempDir } from '../support/temp-dirs';

const skip = needs(['ssh-keygen']);

/** What the vm-manager answers for a VM (GET /vms/{id}), reduced to what the sign-in reads. */
function answer(over: { state?: string; port?: number | null; sshKey?: string; sshPublicKey?: string } = {}) {
  return {
    id: 'abcd1234',
    name: 'web-1',
    image: 'povdesk-test',
    cpus: 1,
    memoryMiB: 512,
    diskGiB: 1,
    network: 'default',
    requireAttestation: true,
    state: over.state ?? 'ready',
    cid: 0,
    machineID: 'm',
    booted: true,
    createdAt: '2026-01-01T00:00:00Z',
    sshPublicKey: over.sshPublicKey ?? 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhZ',
    attestation: { required: true, userDataReleased: true },
    paths: { sshKey: over.sshKey ?? '/state/vms/abcd1234/manager_ed25519_key' },
    povdesk: { ports: { ssh: over.port === undefined ? 2222 : over.port } },
  } as never;
}

describe.skipIf(skip)("signing in to a local VM with the vm-manager's key", () => {
  it("reads the manager's own key file (ssh-keygen, 600) when it holds the VM's listed key", async () => {
    const dir = tempDir('povdesk-vmkey-');
    const file = join(dir, 'manager_ed25519_key');
    const { publicKey } = await ensureManagerKey(file, 'abcd1234');
    expect(readManagerKey(file, publicKey, 'VM web-1')).toBe(readFileSync(file, 'utf8'));
  });

  it('refuses a key others may read, a link, another key, a file that is no key; the message names the file, never the key', async () => {
    const dir = tempDir('povdesk-vmkey-');
    const file = join(dir, 'manager_ed25519_key');
    const { publicKey } = await ensureManagerKey(file, 'abcd1234');
    const secret = readFileSync(file, 'utf8').split('\n')[1]!;
    const refusal = (f: string, pub = publicKey) => {
      try {
        readManagerKey(f, pub, 'VM web-1');
      } catch (e) {
        expect((e as Error).message).not.toContain(secret);
        return e;
      }
      throw new Error('not refused');
    };
    chmodSync(file, 0o640);
    expect(refusal(file)).toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/manager_ed25519_key may be read by others \(mode 640/),
    });
    chmodSync(file, 0o600);
    const link = join(dir, 'link');
    symlinkSync(file, link);
    expect(refusal(link)).toMatchObject({ message: expect.stringContaining('is not a regular file') });
    expect(refusal(file, generateEd25519('other').public.split(' ').slice(0, 2).join(' '))).toMatchObject({
      message: expect.stringContaining('its public half differs'),
    });
    const junk = join(dir, 'junk');
    writeFileSync(junk, 'not a key\n', { mode: 0o600 });
    expect(refusal(junk)).toMatchObject({ message: expect.stringContaining('is not an unencrypted OpenSSH private key') });
    expect(refusal(join(dir, 'missing'))).toMatchObject({ message: expect.stringContaining('cannot be read (ENOENT)') });
  });

  it("takes the key file only inside the manager's state dir, and a VM that is up with a forwarded port", () => {
    expect(vmSshSignIn(answer(), '/state')).toEqual({
      id: 'abcd1234',
      name: 'web-1',
      port: 2222,
      keyFile: '/state/vms/abcd1234/manager_ed25519_key',
      publicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhZ',
    });
    expect(() => vmSshSignIn(answer({ sshKey: '/state/../home/se/.ssh/id_ed25519' }), '/state')).toThrow(
      /outside its state dir \/state; refused/,
    );
    expect(() => vmSshSignIn(answer({ sshKey: 'vms/abcd1234/key' }), '/state')).toThrow(/outside its state dir/);
    expect(() => vmSshSignIn(answer({ state: 'stopped' }), '/state')).toThrow(
      expect.objectContaining({ code: 'conflict', message: expect.stringContaining('is stopped') }),
    );
    expect(() => vmSshSignIn(answer({ port: null }), '/state')).toThrow(
      expect.objectContaining({ code: 'unavailable', message: expect.stringContaining('no forwarded SSH port') }),
    );
    expect(() =>
      vmSshSignIn(answer({ sshPublicKey: 'none yet: the manager makes its key for this VM when the VM first starts' }), '/state'),
    ).toThrow(/holds no SSH key/);
  });
});
