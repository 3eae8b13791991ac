import { describe, expect, it } from 'vitest';
import { povFromHash } from '../../renderer/src/nav';

describe('povFromHash', () => {
  it('reads the POV a povdesk://pov/<id> link opened, and nothing else', () => {
    expect(povFromHash('#/povs/pov-123')).toBe('pov-123');
    expect(povFromHash('#/povs')).toBeNull();
    expect(povFromHash('#/povs/a/b')).toBeNull();
    expect(povFromHash('#/povs/%3Cscript%3E')).toBeNull();
    expect(povFromHash('#/terminals/abc')).toBeNull();
  });
});
