import { describe, expect, it } from 'vitest';
import { environmentSchema, inferOs, vmSchema } from '../../main/services/skytap/schemas';

describe('inferOs', () => {
  const os = (guestOS: unknown): string => inferOs({ hardware: { guestOS } } as never);
  it.each([
    ['windows9srv-64', 'windows'],
    ['windows2019srv-64', 'windows'],
    ['windows9-64', 'windows'],
    ['winNetEnterprise', 'windows'],
    ['winLonghorn64Guest', 'windows'],
    ['winXPPro', 'windows'],
    ['centos-64', 'linux'],
    ['rhel8-64', 'linux'],
    ['ubuntu-64', 'linux'],
    ['debian10-64', 'linux'],
    ['sles15-64', 'linux'],
    ['otherLinux64Guest', 'linux'],
    ['other26xLinux-64', 'linux'],
    ['oracleLinux7-64', 'linux'],
    ['amazonlinux2-64', 'linux'],
    ['  Ubuntu-64 ', 'linux'],
  ])('%s → %s', (id, want) => expect(os(id)).toBe(want));

  it.each([
    [''],
    ['   '],
    [null],
    [undefined],
    ['solaris10-64'],
    ['freebsd-64'],
    ['darwin-64'],
    ['other-64'],
    ['aix'],
    ['wonky'],
    ['winter-os'],
  ])('blank or unrecognised %s → unknown, never a guess', (id) => expect(os(id)).toBe('unknown'));

  it('a VM without hardware is unknown', () => {
    expect(inferOs({})).toBe('unknown');
    expect(inferOs({ hardware: null })).toBe('unknown');
  });
});

describe('schemas', () => {
  it('accept Skytap objects with extra fields and fill the optional ones', () => {
    const env = environmentSchema.parse({ id: '1', name: 'e', runstate: 'busy', owner_name: 'x', vms: null });
    expect(env).toMatchObject({ id: '1', rate_limited: false, vms: [], errors: [] });
    const vm = vmSchema.parse({ id: '9', name: 'v', runstate: 'reset' });
    expect(vm.interfaces).toEqual([]);
    expect(vm.hardware.guestOS).toBeNull();
  });

  it('refuse numeric ids and unknown runstates', () => {
    expect(environmentSchema.safeParse({ id: 1, name: 'e', runstate: 'running' }).success).toBe(false);
    expect(environmentSchema.safeParse({ id: '1', name: 'e', runstate: 'reset' }).success).toBe(false);
  });
});
