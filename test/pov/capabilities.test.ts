import { describe, expect, it } from 'vitest';
import {
  capabilitiesOf,
  PLATFORMS,
  requireBootstrapMechanism,
  requireCapability,
} from '../../main/services/lab-platforms/capabilities';

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
    expect(() => requireCapability('local-qemu', 'publishSets')).toThrow(
      expect.objectContaining({ code: 'unsupported', message: expect.stringMatching(/Local QEMU.*share links.*no public share link/) }),
    );
    expect(() => requireCapability('local-qemu', 'schedules')).toThrow(/no scheduler/);
    expect(() => requireBootstrapMechanism('local-qemu', 'metadata')).toThrow(
      expect.objectContaining({ code: 'unsupported', message: expect.stringMatching(/guest-exec, not metadata/) }),
    );
    expect(() => capabilitiesOf('vsphere')).toThrow(expect.objectContaining({ code: 'unsupported' }));
  });

  it('every refusal carries a reason', () => {
    for (const p of Object.values(PLATFORMS)) {
      for (const [, s] of Object.entries(p.features)) if (!s.supported) expect(s.note).toBeTruthy();
    }
  });
});
