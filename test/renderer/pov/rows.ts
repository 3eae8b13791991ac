import { povActionsFor, type PovView } from '../../../shared/contract/pov';

const NOW = Date.parse('2026-12-01T03:00:00Z');

/** n POV views as the list receives them (no control node yet, row 2 'installed'). */
export function fakeRows(n: number): PovView[] {
  return Array.from({ length: n }, (_, i) => {
    const runstate = i % 3 === 0 ? 'suspended' : 'running';
    return {
      id: `p${i}`,
      name: `POV ${i}`,
      platform: 'skytap',
      templateId: '500',
      templateName: 'PAM POV',
      envId: String(1000 + i),
      state: 'active',
      runstate,
      rateLimited: i === 1,
      errorMessage: null,
      lastConfirmedAt: new Date(NOW - 4 * 60_000).toISOString(),
      envGoneAt: null,
      controlNode: { name: null, vmId: null, status: i === 2 ? 'installed' : null, reason: null, mode: null },
      createdAt: new Date(NOW - i * 1000).toISOString(),
      updatedAt: new Date(NOW).toISOString(),
      activeJobId: null,
      actions: povActionsFor({ state: 'active', runstate, envId: String(1000 + i), busy: false }),
    };
  });
}
