/**
 * SSH into a local VM as the vm-manager does for exec: the manager's per-VM key (the first key in
 * root's authorized_keys, its private half a 0600 file in the VM's directory of the manager's state
 * dir) and the guest's manager-made host key. The app and its local manager run as the same user on
 * the same machine, so the app reads that file where the manager says it is, as it reads the VM's
 * console log and serial socket; nothing of it travels over the API, to the renderer or into a log
 * (docs/decisions.md, "SSH into a local VM with the manager's key").
 */
import { relative, resolve, isAbsolute } from 'node:path';
import { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import type { VmRecord } from '../../../shared/contract/vm';
import { LIVE_VM_STATES } from '../../../shared/vm-states';
import type { Loose } from '../../vm-api/client';
import type { ApiVm } from '../../vm-api/schemas';
import { vmView } from './views';

/** Where the session goes and what proves it: the forwarded port, the key file, its public half. */
export interface VmSshSignIn {
  id: string;
  name: string;
  port: number;
  /** the manager's private key file (inside its state dir; checked again when read) */
  keyFile: string;
  /** `ssh-ed25519 <blob>`: the key file must hold this key's private half */
  publicKey: string;
}

const ED25519_LINE = /^ssh-ed25519 [A-Za-z0-9+/]+=*$/;

/** What the manager answered for VM id, checked before the app reads any file it names. */
export function vmSshSignIn(raw: Loose<ApiVm>, stateDir: string): VmSshSignIn {
  const vm = vmView(raw);
  const what = `VM ${vm.name} (${vm.id})`;
  if (!LIVE_VM_STATES.includes(vm.state)) {
    throw new AppError('conflict', `${what} is ${vm.state}, so nothing answers SSH; start it first`, { vmId: vm.id, state: vm.state });
  }
  if (vm.sshPort === null) {
    throw new AppError(
      'unavailable',
      `${what} has no forwarded SSH port (its QEMU was started by an older vm-manager); stop and start it`,
      { vmId: vm.id },
    );
  }
  const publicKey = z.string().regex(ED25519_LINE).safeParse(raw.sshPublicKey);
  const keyFile = raw.paths?.sshKey;
  if (!publicKey.success || typeof keyFile !== 'string' || !keyFile) {
    throw new AppError(
      'unavailable',
      `the vm-manager holds no SSH key for ${what} yet (it makes one when the VM starts); stop and start it`,
      { vmId: vm.id },
    );
  }
  const rel = relative(resolve(stateDir), resolve(keyFile));
  if (!isAbsolute(keyFile) || rel.startsWith('..') || isAbsolute(rel)) {
    throw new AppError(
      'internal',
      `the vm-manager named ${keyFile} as the SSH key of ${what}, which is outside its state dir ${stateDir}; refused`,
      { vmId: vm.id },
    );
  }
  return { id: vm.id, name: vm.name, port: vm.sshPort, keyFile: resolve(keyFile), publicKey: publicKey.data };
}

/** The host key a connection to the local forward `port` must present, when its VM's initrd quote verified. */
export function pretrustedHostKey(vms: VmRecord[], port: number): { key: Buffer; what: string } | null {
  const vm = vms.find((v) => v.sshPort === port);
  if (!vm?.sshHostKey || !vm.attestation.required || vm.attestation.initrdVerified !== true) return null;
  return { key: Buffer.from(vm.sshHostKey.split(' ')[1] ?? '', 'base64'), what: `local VM ${vm.name} (attested)` };
}
