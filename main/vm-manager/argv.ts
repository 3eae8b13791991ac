/**
 * QEMU's argv, built by one pure function from a spec. Nothing here touches the file system or
 * the environment: the caller resolves paths first, so the argv can be tested directly.
 */

export type Accel = 'kvm' | 'hvf' | 'whpx' | 'tcg';

export type BootSource =
  /** Direct kernel boot of the test image: OVMF loads the kernel and initrd from fw_cfg. */
  | { kind: 'kernel'; kernel: string; initrd: string; append: string; dataDisk?: string | null }
  /** An imported image: a per-VM qcow2 overlay on the immutable base. */
  | { kind: 'disk'; overlay: string };

export interface QemuSpec {
  id: string;
  accel: Accel;
  cpus: number;
  memoryMib: number;
  /** OVMF code, mapped read-only. */
  ovmfCode: string;
  /** The VM's own copy of the OVMF vars template. */
  ovmfVars: string;
  boot: BootSource;
  /** Everything the guest prints on its serial line, also while nobody is connected to serialSocket. */
  consoleFile: string;
  /**
   * The serial line as a unix socket (QEMU listens; one client at a time) for an interactive
   * console; the chardev logs into consoleFile, truncated at each QEMU start. Without
   * it the serial line goes to consoleFile only (`-serial file:`).
   */
  serialSocket?: string | null;
  qmpSocket: string;
  /** A second QMP monitor the manager keeps open for events (a guest-initiated RESET re-gates user-data). */
  qmpEventsSocket?: string | null;
  /** swtpm's data socket; null runs the VM without a TPM. */
  swtpmSocket: string | null;
  /** The command QEMU runs per guest connection to 169.254.169.254:80 (argv, not a shell line). */
  metadataProxy: string[] | null;
  /** Stop instead of rebooting when the guest asks for a reset (used by one-shot probes). */
  noReboot?: boolean;
  /** A port on the host's 127.0.0.1 forwarded to the guest's port 22 (SSH into a local VM). */
  sshHostPort?: number | null;
  /** More guest ports on the host's 127.0.0.1 (POST /vms/{id}/forward), re-made at every start. */
  forwards?: { hostPort: number; guestPort: number }[];
  /**
   * Guest→host forwards: a guest connection to address:port runs cmd (per connection, like the
   * metadata proxy), which pipes it to a port on the host's loopback. Works with restrict=on.
   */
  guestForwards?: { address: string; port: number; cmd: string[] }[];
  /**
   * 'restricted' (the default): slirp's restrict=on, so the guest reaches only the metadata service
   * and the explicit forwards, never the host's loopback services or the outside. 'nat': the guest
   * may open connections out through the host, including to every service on its 127.0.0.1.
   */
  network?: VmNetwork;
  /**
   * The VM's network (networks.ts): a second NIC (eth1) on the network's vde_switch, with the MAC
   * of its lease, so the gateway's DHCP gives it its address. Null: eth0 only.
   */
  lan?: { sock: string; mac: string } | null;
  /**
   * Internet access (the network's `internet`): a third NIC (eth2) on the VM's own passt, which
   * NATs it out through the host's sockets and does not map its gateway to the host's loopback.
   */
  internet?: { sock: string } | null;
  /**
   * Resume from a memory snapshot (snapshots.ts): QEMU waits for QMP migrate-incoming, which
   * loads the saved state (memory, devices, the vTPM's) instead of booting.
   */
  incoming?: boolean;
}

export type VmNetwork = 'restricted' | 'nat';
export const VM_NETWORKS: readonly VmNetwork[] = ['restricted', 'nat'];

export const GUEST_NET = {
  net: '169.254.169.0/24',
  host: '169.254.169.2',
  metadata: '169.254.169.254',
  guest: '169.254.169.15',
} as const;

/** QEMU option syntax: a comma inside a value is written twice. */
export function qemuEscape(value: string): string {
  return value.replace(/,/g, ',,');
}

/**
 * Quotes one word for the GLib shell parser QEMU's slirp uses on the guestfwd cmd
 * (g_shell_parse_argv): single quotes, with ' written as '\''.
 */
export function shellWord(word: string): string {
  if (/^[A-Za-z0-9_/.:=@%+-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function positiveInt(name: string, v: number): void {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`qemu spec: ${name} must be a positive integer, got ${v}`);
}

export function qemuArgv(spec: QemuSpec): string[] {
  positiveInt('cpus', spec.cpus);
  positiveInt('memoryMib', spec.memoryMib);
  if (!/^[A-Za-z0-9_-]+$/.test(spec.id)) throw new Error(`qemu spec: id "${spec.id}" may hold only letters, digits, _ and -`);
  const a: string[] = ['-name', `guest=${spec.id}`, '-machine', 'q35', '-accel', spec.accel];
  if (spec.accel === 'kvm' || spec.accel === 'hvf') a.push('-cpu', 'host');
  a.push(
    '-smp',
    String(spec.cpus),
    '-m',
    `${spec.memoryMib}M`,
    '-nodefaults',
    '-display',
    'none',
    ...(spec.serialSocket
      ? [
          '-chardev',
          `socket,id=ser0,path=${qemuEscape(spec.serialSocket)},server=on,wait=off,logfile=${qemuEscape(spec.consoleFile)},logappend=on`,
          '-serial',
          'chardev:ser0',
        ]
      : ['-serial', `file:${qemuEscape(spec.consoleFile)}`]),
    '-qmp',
    `unix:${qemuEscape(spec.qmpSocket)},server=on,wait=off`,
    ...(spec.qmpEventsSocket ? ['-qmp', `unix:${qemuEscape(spec.qmpEventsSocket)},server=on,wait=off`] : []),
    '-drive',
    `if=pflash,format=raw,unit=0,readonly=on,file=${qemuEscape(spec.ovmfCode)}`,
    '-drive',
    `if=pflash,format=raw,unit=1,file=${qemuEscape(spec.ovmfVars)}`,
  );
  if (spec.boot.kind === 'kernel') {
    a.push('-kernel', spec.boot.kernel, '-initrd', spec.boot.initrd, '-append', spec.boot.append);
    // The VM's own disk beside a kernel boot (what "Save clean state" keeps and "Reset" restores).
    if (spec.boot.dataDisk)
      a.push('-drive', `if=none,id=disk0,format=qcow2,file=${qemuEscape(spec.boot.dataDisk)}`, '-device', 'virtio-blk-pci,drive=disk0');
  } else {
    a.push(
      '-drive',
      `if=none,id=disk0,format=qcow2,file=${qemuEscape(spec.boot.overlay)}`,
      '-device',
      'virtio-blk-pci,drive=disk0,bootindex=0',
    );
  }
  if (spec.swtpmSocket !== null) {
    a.push(
      '-chardev',
      `socket,id=chrtpm,path=${qemuEscape(spec.swtpmSocket)}`,
      '-tpmdev',
      'emulator,id=tpm0,chardev=chrtpm',
      '-device',
      'tpm-crb,tpmdev=tpm0',
    );
  }
  const network = spec.network ?? 'restricted';
  if (!VM_NETWORKS.includes(network)) throw new Error(`qemu spec: network must be ${VM_NETWORKS.join(' or ')}, got ${String(network)}`);
  let netdev = `user,id=net0,net=${GUEST_NET.net},host=${GUEST_NET.host}`;
  if (network === 'restricted') netdev += ',restrict=on';
  if (spec.metadataProxy !== null) {
    if (spec.metadataProxy.length === 0) throw new Error('qemu spec: metadataProxy must name a program');
    const cmd = spec.metadataProxy.map(shellWord).join(' ');
    netdev += `,guestfwd=tcp:${GUEST_NET.metadata}:80-cmd:${qemuEscape(cmd)}`;
  }
  for (const g of spec.guestForwards ?? []) {
    if (!Number.isInteger(g.port) || g.port < 1 || g.port > 65535)
      throw new Error(`qemu spec: guest forward port must be a port number, got ${g.port}`);
    if (
      !/^169\.254\.169\.\d{1,3}$/.test(g.address) ||
      [GUEST_NET.host, GUEST_NET.metadata, GUEST_NET.guest, '169.254.169.3'].includes(g.address as never)
    ) {
      throw new Error(`qemu spec: guest forward address ${g.address} must be a free address of ${GUEST_NET.net}`);
    }
    if (g.cmd.length === 0) throw new Error('qemu spec: a guest forward must name a program');
    netdev += `,guestfwd=tcp:${g.address}:${g.port}-cmd:${qemuEscape(g.cmd.map(shellWord).join(' '))}`;
  }
  if (spec.sshHostPort != null) {
    if (!Number.isInteger(spec.sshHostPort) || spec.sshHostPort < 1 || spec.sshHostPort > 65535) {
      throw new Error(`qemu spec: sshHostPort must be a port number, got ${spec.sshHostPort}`);
    }
    // Loopback only: nothing else on the network reaches the guest through it.
    netdev += `,hostfwd=tcp:127.0.0.1:${spec.sshHostPort}-:22`;
  }
  for (const f of spec.forwards ?? []) {
    if (![f.hostPort, f.guestPort].every((p) => Number.isInteger(p) && p >= 1 && p <= 65535))
      throw new Error(`qemu spec: forward ${f.hostPort}->${f.guestPort} must join two port numbers`);
    netdev += `,hostfwd=tcp:127.0.0.1:${f.hostPort}-:${f.guestPort}`;
  }
  a.push('-netdev', netdev, '-device', 'virtio-net-pci,netdev=net0');
  if (spec.lan) {
    if (!/^52:54(:[0-9a-f]{2}){4}$/.test(spec.lan.mac)) throw new Error(`qemu spec: lan mac ${spec.lan.mac} must be 52:54:xx:xx:xx:xx`);
    a.push('-netdev', `vde,id=net1,sock=${qemuEscape(spec.lan.sock)}`, '-device', `virtio-net-pci,netdev=net1,mac=${spec.lan.mac}`);
  }
  if (spec.internet) {
    a.push(
      '-netdev',
      `stream,id=net2,server=off,addr.type=unix,addr.path=${qemuEscape(spec.internet.sock)}`,
      '-device',
      'virtio-net-pci,netdev=net2',
    );
  }
  if (spec.noReboot) a.push('-no-reboot');
  if (spec.incoming) a.push('-incoming', 'defer');
  return a;
}
