import { describe, expect, it } from 'vitest';
import { capabilitiesOf, PLATFORMS, requireBootstrapMechanism, requireCapability } from '../../shared/lab-platforms';

describe('lab platform capabilities', () => {
  it('Skytap injects by metadata and supports publish sets, schedules and project scoping', () => {
    const s = capabilitiesOf('skytap');
    expect(s.bootstrapInjection).toBe('metadata');
    for (const f of ['publishSets', 'schedules', 'projectScoping', 'templates', 'suspend'] as const) {
      expect(s.features[f].supported).toBe(true);
      expect(() => requireCapability('skytap', f)).not.toThrow();
    }
    expect(() => requireBootstrapMechanism('skytap', 'metadata')).not.toThrow();
  });

  it('refuses up front, naming the platform and the reason', () => {
    expect(() => requireCapability('local', 'publishSets')).toThrow(
      expect.objectContaining({
        code: 'unsupported',
        message: expect.stringMatching(/This laptop \(vm-manager\).*share links.*no share links/),
      }),
    );
    expect(() => requireCapability('local', 'schedules')).toThrow(/no scheduler/);
    expect(() => requireCapability('local', 'projectScoping')).toThrow(/Skytap concept/);
    expect(() => requireBootstrapMechanism('local', 'guest-exec')).toThrow(
      expect.objectContaining({ code: 'unsupported', message: expect.stringMatching(/metadata, not guest-exec/) }),
    );
    expect(() => capabilitiesOf('vsphere')).toThrow(expect.objectContaining({ code: 'unsupported' }));
    expect(() => capabilitiesOf('local-qemu')).toThrow(/known platforms: skytap, local/);
  });

  it('local has templates, suspend (stop/start, from disk) and metadata injection', () => {
    const l = capabilitiesOf('local');
    expect(l.bootstrapInjection).toBe('metadata');
    for (const f of ['templates', 'suspend', 'bootstrapInjection'] as const) expect(() => requireCapability('local', f)).not.toThrow();
    expect(l.features.suspend.note).toMatch(/boots again from its disk/);
    expect(() => requireBootstrapMechanism('local', 'metadata')).not.toThrow();
  });

  it('every refusal carries a reason', () => {
    for (const p of Object.values(PLATFORMS)) {
      for (const [, s] of Object.entries(p.features)) if (!s.supported) expect(s.note).toBeTruthy();
    }
  });
});
