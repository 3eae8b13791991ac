import { describe, expect, it } from 'vitest';
import { qemuArgv, qemuEscape, shellWord, type QemuSpec } from '../../main/vm-manager/argv';

const base: QemuSpec = {
  id: 'ab12cd34',
  accel: 'tcg',
  cpus: 2,
  memoryMib: 512,
  ovmfCode: '/usr/share/OVMF/OVMF_CODE_4M.fd',
  ovmfVars: '/state/vms/ab12cd34/OVMF_VARS.fd',
  boot: { kind: 'kernel', kernel: '/state/images/t/vmlinuz', initrd: '/state/images/t/initrd.img', append: 'console=ttyS0,115200' },
  consoleFile: '/state/vms/ab12cd34/console.log',
  serialSocket: '/state/vms/ab12cd34/serial.sock',
  qmpSocket: '/state/vms/ab12cd34/qmp.sock',
  swtpmSocket: '/state/vms/ab12cd34/tpm/swtpm.sock',
  metadataProxy: ['/usr/bin/node', '/app/metadata-proxy.cjs', '/state/metadata.sock', 'ab12cd34'],
};

function opt(argv: string[], flag: string): string[] {
  const out: string[] = [];
  argv.forEach((a, i) => {
    if (a === flag) out.push(argv[i + 1] ?? '');
  });
  return out;
}

describe('qemuArgv', () => {
  it('builds the fixed part in order', () => {
    const a = qemuArgv(base);
    expect(a.slice(0, 6)).toEqual(['-name', 'guest=ab12cd34', '-machine', 'q35', '-accel', 'tcg']);
    expect(opt(a, '-smp')).toEqual(['2']);
    expect(opt(a, '-m')).toEqual(['512M']);
    expect(a).toContain('-nodefaults');
    expect(opt(a, '-display')).toEqual(['none']);
    expect(opt(a, '-serial')).toEqual(['chardev:ser0']);
    // the serial line: a listening unix socket for the interactive console, logged to console.log
    expect(opt(a, '-chardev')[0]).toBe(
      'socket,id=ser0,path=/state/vms/ab12cd34/serial.sock,server=on,wait=off,logfile=/state/vms/ab12cd34/console.log,logappend=on',
    );
    expect(opt(a, '-qmp')).toEqual(['unix:/state/vms/ab12cd34/qmp.sock,server=on,wait=off']);
    expect(a).not.toContain('-cpu'); // tcg keeps the default model
  });

  it('waits for a memory snapshot (-incoming defer) only when resuming one', () => {
    expect(qemuArgv(base)).not.toContain('-incoming');
    const a = qemuArgv({ ...base, incoming: true });
    expect(a.slice(a.indexOf('-incoming'), a.indexOf('-incoming') + 2)).toEqual(['-incoming', 'defer']);
  });

  it('maps OVMF code read-only and the per-VM vars copy writable', () => {
    const drives = opt(qemuArgv(base), '-drive');
    expect(drives[0]).toBe('if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd');
    expect(drives[1]).toBe('if=pflash,format=raw,unit=1,file=/state/vms/ab12cd34/OVMF_VARS.fd');
  });

  it('boots the test image with -kernel/-initrd/-append and no disk', () => {
    const a = qemuArgv(base);
    expect(opt(a, '-kernel')).toEqual(['/state/images/t/vmlinuz']);
    expect(opt(a, '-initrd')).toEqual(['/state/images/t/initrd.img']);
    expect(opt(a, '-append')).toEqual(['console=ttyS0,115200']); // one argv word: commas not doubled
    expect(opt(a, '-drive')).toHaveLength(2);
  });

  it('boots an imported image from its qcow2 overlay', () => {
    const a = qemuArgv({ ...base, boot: { kind: 'disk', overlay: '/state/vms/ab12cd34/disk.qcow2' } });
    expect(a).not.toContain('-kernel');
    expect(opt(a, '-drive')[2]).toBe('if=none,id=disk0,format=qcow2,file=/state/vms/ab12cd34/disk.qcow2');
    expect(opt(a, '-device')).toContain('virtio-blk-pci,drive=disk0,bootindex=0');
  });

  it('wires swtpm as a tpm-crb device, or leaves it out', () => {
    const a = qemuArgv(base);
    expect(opt(a, '-chardev')).toEqual([
      expect.stringMatching(/^socket,id=ser0,/),
      'socket,id=chrtpm,path=/state/vms/ab12cd34/tpm/swtpm.sock',
    ]);
    expect(opt(a, '-tpmdev')).toEqual(['emulator,id=tpm0,chardev=chrtpm']);
    expect(opt(a, '-device')).toContain('tpm-crb,tpmdev=tpm0');
    const b = qemuArgv({ ...base, swtpmSocket: null });
    expect(b).not.toContain('-tpmdev');
    expect(opt(b, '-chardev')).toHaveLength(1);
    expect(opt(b, '-device')).not.toContain('tpm-crb,tpmdev=tpm0');
  });

  it('puts the metadata address inside the user network and forwards it to the proxy command', () => {
    const [netdev] = opt(qemuArgv(base), '-netdev');
    expect(netdev).toBe(
      'user,id=net0,net=169.254.169.0/24,host=169.254.169.2,restrict=on,guestfwd=tcp:169.254.169.254:80-cmd:/usr/bin/node ' +
        '/app/metadata-proxy.cjs /state/metadata.sock ab12cd34',
    );
    expect(opt(qemuArgv({ ...base, metadataProxy: null }), '-netdev')).toEqual([
      'user,id=net0,net=169.254.169.0/24,host=169.254.169.2,restrict=on',
    ]);
  });

  it('runs a per-connection command for each guest→host forward at its address, next to restrict=on', () => {
    const netdev =
      opt(
        qemuArgv({
          ...base,
          guestForwards: [{ address: '169.254.169.100', port: 8443, cmd: ['/bin/sh', '/app/fwd.sh', '/state/a,b', '8'] }],
        }),
        '-netdev',
      )[0] ?? '';
    expect(netdev).toContain(',restrict=on');
    expect(netdev).toContain(",guestfwd=tcp:169.254.169.100:8443-cmd:/bin/sh /app/fwd.sh '/state/a,,b' 8");
    for (const address of ['169.254.169.2', '169.254.169.254', '169.254.169.15', '169.254.169.3', '10.0.2.100']) {
      expect(() => qemuArgv({ ...base, guestForwards: [{ address, port: 1, cmd: ['x'] }] }), address).toThrow(/free address/);
    }
    expect(() => qemuArgv({ ...base, guestForwards: [{ address: '169.254.169.100', port: 0, cmd: ['x'] }] })).toThrow(/port number/);
  });

  it("forwards a loopback-only host port to the guest's port 22 when asked", () => {
    const [netdev] = opt(qemuArgv({ ...base, metadataProxy: null, sshHostPort: 40022 }), '-netdev');
    expect(netdev).toBe('user,id=net0,net=169.254.169.0/24,host=169.254.169.2,restrict=on,hostfwd=tcp:127.0.0.1:40022-:22');
    expect(opt(qemuArgv({ ...base, sshHostPort: null }), '-netdev')[0]).not.toMatch(/hostfwd/);
  });

  it('fences the guest off the host (restrict=on) unless the VM opted into outbound NAT', () => {
    expect(opt(qemuArgv({ ...base, network: 'restricted' }), '-netdev')[0]).toMatch(/,restrict=on,/);
    const nat = opt(qemuArgv({ ...base, network: 'nat', sshHostPort: 40022 }), '-netdev')[0]!;
    expect(nat).not.toMatch(/restrict/);
    expect(nat).toMatch(/guestfwd=tcp:169\.254\.169\.254:80-cmd:/);
    expect(nat).toMatch(/hostfwd=tcp:127\.0\.0\.1:40022-:22$/);
    expect(() => qemuArgv({ ...base, network: 'bridge' as never })).toThrow(/network must be restricted or nat/);
  });

  it("joins the VM to its network's switch on a second NIC with the lease's MAC", () => {
    const a = qemuArgv({ ...base, lan: { sock: '/state/networks/lab,a/switch', mac: '52:54:ab:12:cd:34' } });
    expect(opt(a, '-netdev')[1]).toBe('vde,id=net1,sock=/state/networks/lab,,a/switch');
    expect(opt(a, '-device').slice(-1)).toEqual(['virtio-net-pci,netdev=net1,mac=52:54:ab:12:cd:34']);
    // eth0 (the user-mode NIC) stays first, so the guest's eth0 is still the metadata service's
    expect(opt(a, '-device').indexOf('virtio-net-pci,netdev=net0')).toBeLessThan(opt(a, '-device').length - 1);
    expect(opt(qemuArgv({ ...base, lan: null }), '-netdev')).toHaveLength(1);
    expect(() => qemuArgv({ ...base, lan: { sock: '/s', mac: '02:00:00:00:00:01' } })).toThrow(/52:54/);
  });

  it('opens a second QMP monitor for events when asked', () => {
    expect(opt(qemuArgv({ ...base, qmpEventsSocket: '/state/vms/ab12cd34/qmp-events.sock' }), '-qmp')).toEqual([
      'unix:/state/vms/ab12cd34/qmp.sock,server=on,wait=off',
      'unix:/state/vms/ab12cd34/qmp-events.sock,server=on,wait=off',
    ]);
  });

  it('doubles commas in option values and quotes odd words in the proxy command', () => {
    const a = qemuArgv({
      ...base,
      consoleFile: '/s,t/console.log',
      serialSocket: '/s,t/serial.sock',
      metadataProxy: ['/usr/bin/node', '/my app/proxy,x.cjs', "it's"],
    });
    expect(opt(a, '-chardev')[0]).toBe('socket,id=ser0,path=/s,,t/serial.sock,server=on,wait=off,logfile=/s,,t/console.log,logappend=on');
    expect(opt(a, '-netdev')[0]).toContain(`cmd:/usr/bin/node '/my app/proxy,,x.cjs' 'it'\\''s'`);
    expect(qemuEscape('a,b,,c')).toBe('a,,b,,,,c');
    expect(shellWord('plain/path.cjs')).toBe('plain/path.cjs');
  });

  it('without a serial socket the serial line goes to the console file only', () => {
    const a = qemuArgv({ ...base, serialSocket: null });
    expect(opt(a, '-serial')).toEqual(['file:/state/vms/ab12cd34/console.log']);
    expect(opt(a, '-chardev')).toEqual(['socket,id=chrtpm,path=/state/vms/ab12cd34/tpm/swtpm.sock']);
  });

  it('uses the host CPU under kvm', () => {
    expect(opt(qemuArgv({ ...base, accel: 'kvm' }), '-cpu')).toEqual(['host']);
  });

  it('refuses a spec it cannot express', () => {
    expect(() => qemuArgv({ ...base, cpus: 0 })).toThrow(/cpus must be a positive integer/);
    expect(() => qemuArgv({ ...base, memoryMib: 1.5 })).toThrow(/memoryMib/);
    expect(() => qemuArgv({ ...base, id: 'a b' })).toThrow(/id/);
    expect(() => qemuArgv({ ...base, metadataProxy: [] })).toThrow(/metadataProxy/);
    for (const p of [0, 65536, 22.5]) expect(() => qemuArgv({ ...base, sshHostPort: p })).toThrow(/sshHostPort/);
  });
});
