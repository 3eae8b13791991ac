import { describe, expect, it } from 'vitest';
import { resolveControlNode, type ResolveVm } from '../../main/services/control-node/resolve';

const lin = (id: string, name: string): ResolveVm => ({ id, name, os: 'linux' });
const win = (id: string, name: string): ResolveVm => ({ id, name, os: 'windows' });
const unk = (id: string, name: string): ResolveVm => ({ id, name, os: 'unknown' });

function vmOf(r: ReturnType<typeof resolveControlNode>) {
  if (!('vm' in r)) throw new Error(`expected a VM, got refusal: ${r.refusal.reason}`);
  return r;
}
function refusalOf(r: ReturnType<typeof resolveControlNode>) {
  if (!('refusal' in r)) throw new Error(`expected a refusal, got ${r.vm.name}`);
  return r.refusal;
}

describe('control node resolution', () => {
  const vms = [win('1', 'DC01'), lin('2', 'BtPocLin01'), win('3', 'App01'), lin('4', 'password-broker')];

  it('step 1: the typed name wins, exact and case-insensitive, over every later step', () => {
    const r = vmOf(resolveControlNode({ typedName: 'btpoclin01', enrolledVmId: '4', vms }));
    expect(r.vm.id).toBe('2');
    expect(r.step).toBe('typed');
  });

  it('step 1 refusal: a typed name that matches nothing is refused, never a guess (even a substring)', () => {
    const f = refusalOf(resolveControlNode({ typedName: 'broker', enrolledVmId: '2', vms }));
    expect(f.reason).toMatch(/no VM is called "broker"/);
    expect(f.candidates).toEqual(['DC01', 'BtPocLin01', 'App01', 'password-broker']);
  });

  it('step 1 refusal: a typed name matching two VMs is refused', () => {
    const f = refusalOf(resolveControlNode({ typedName: 'node', vms: [lin('1', 'Node'), lin('2', 'NODE')] }));
    expect(f.reason).toMatch(/2 VMs are called/);
    expect(f.candidates).toEqual(['Node', 'NODE']);
  });

  it('step 2: the enrolled control node is kept even when another Linux VM is the only candidate', () => {
    const r = vmOf(resolveControlNode({ enrolledVmId: '3', vms: [lin('1', 'a'), win('3', 'old-node')] }));
    expect(r.vm.id).toBe('3');
    expect(r.step).toBe('enrolled');
  });

  it('step 2 is skipped when the enrolled VM no longer exists', () => {
    const r = vmOf(resolveControlNode({ enrolledVmId: 'gone', vms: [lin('1', 'a'), win('3', 'b')] }));
    expect(r.step).toBe('only-linux');
  });

  it('step 3: the only Linux VM, whatever its name or position', () => {
    const r = vmOf(resolveControlNode({ vms: [win('1', 'w1'), win('2', 'w2'), lin('9', 'BtPocLin01')] }));
    expect(r.vm.name).toBe('BtPocLin01');
    expect(r.step).toBe('only-linux');
  });

  it('step 3 excludes the Entitle agent host and the Resource Broker host (by name and by role)', () => {
    const set = [lin('1', 'entitle01'), lin('2', 'RB-HOST'), lin('3', 'node'), { ...lin('4', 'x'), roles: ['resource-broker'] }];
    const r = vmOf(resolveControlNode({ vms: set, entitleHostName: 'Entitle01', brokerHostName: 'rb-host' }));
    expect(r.vm.name).toBe('node');
  });

  it('step 3: an unknown OS is not Linux', () => {
    const r = vmOf(resolveControlNode({ vms: [unk('1', 'mystery'), lin('2', 'tux'), win('3', 'w')] }));
    expect(r.vm.name).toBe('tux');
  });

  it('step 4: a VM called broker breaks a tie between several Linux VMs', () => {
    const r = vmOf(resolveControlNode({ vms: [lin('1', 'web'), lin('2', 'Broker'), lin('3', 'db')] }));
    expect(r.vm.id).toBe('2');
    expect(r.step).toBe('broker-name');
  });

  it('step 4 does not match names that merely contain broker', () => {
    const f = refusalOf(resolveControlNode({ vms: [lin('1', 'password-broker'), lin('2', 'broker2')] }));
    expect(f.candidates).toEqual(['password-broker', 'broker2']);
  });

  it('step 5 refusal: several Linux VMs and no broker names the Linux candidates', () => {
    const f = refusalOf(resolveControlNode({ vms: [lin('1', 'web'), win('2', 'w'), lin('3', 'db')] }));
    expect(f.reason).toMatch(/2 Linux VMs/);
    expect(f.candidates).toEqual(['web', 'db']);
  });

  it('step 5 refusal: no Linux VM at all, with unknown-OS VMs named as the ones to fix', () => {
    const f = refusalOf(resolveControlNode({ vms: [win('1', 'w'), unk('2', 'blank-os')] }));
    expect(f.reason).toMatch(/unknown OS/);
    expect(f.candidates).toEqual(['blank-os']);
  });

  it('step 5 refusal: only Windows VMs names every VM', () => {
    const f = refusalOf(resolveControlNode({ vms: [win('1', 'a'), win('2', 'b')] }));
    expect(f.reason).toMatch(/no Linux VM/);
    expect(f.candidates).toEqual(['a', 'b']);
  });
});
