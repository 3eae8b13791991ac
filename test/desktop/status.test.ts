import { afterEach, describe, expect, it } from 'vitest';
import type { JobRecord } from '../../shared/contract/core';
import { povBriefs, taskbarProgress, trayModel } from '../../main/desktop/status';
import { createPov, HOUR, shareWorld, type ShareTestWorld } from '../share/helpers';

const now = Date.parse('2026-12-01T12:00:00Z');
const job = (id: string, state: JobRecord['state'], fraction: number | null, routine = false): JobRecord => ({
  id,
  kind: 'vm.create',
  title: `job ${id}`,
  subject: null,
  routine,
  state,
  progress: { step: 's', fraction, message: '' },
  createdAt: '2026-12-01T11:00:00Z',
  startedAt: null,
  finishedAt: null,
  error: null,
  result: null,
});

describe('tray model', () => {
  it('lists running VMs, POVs near auto-delete (soonest first) and jobs in progress, then Open and Quit', () => {
    const m = trayModel({
      vms: [
        { id: 'a', name: 'dc01', state: 'running' },
        { id: 'b', name: 'web', state: 'stopped' },
      ],
      povs: [
        { id: 'p1', name: 'Acme', autoDeleteAt: '2026-12-01T20:00:00Z' },
        { id: 'p2', name: 'Globex', autoDeleteAt: '2026-12-01T12:30:00Z' },
        { id: 'p3', name: 'Later', autoDeleteAt: '2026-12-05T12:00:00Z' },
        { id: 'p4', name: 'Gone', autoDeleteAt: '2026-12-01T11:00:00Z' },
        { id: 'p5', name: 'Never', autoDeleteAt: null },
      ],
      jobs: [job('1', 'running', 0.42), job('2', 'queued', null), job('3', 'succeeded', 1), job('4', 'running', null, true)],
      now,
    });
    expect(m.items.filter((i) => i.kind !== 'separator').map((i) => ('label' in i ? i.label : ''))).toEqual([
      'Running VMs (1)',
      'dc01 — running',
      'POVs near auto-delete (2)',
      'Globex — deleted in 30 min',
      'Acme — deleted in 8 h',
      'Jobs in progress (2)',
      'job 1 — 42%',
      'job 2 — queued',
      'Open POV Desk',
      'Quit POV Desk',
    ]);
    expect(m.items.find((i) => i.kind === 'item' && i.label.startsWith('Globex'))).toMatchObject({ action: { open: 'povs/p2' } });
    expect(m.tooltip).toBe('POV Desk — 1 VM running, 2 jobs in progress');
  });

  it('is just Open and Quit when nothing runs, and caps long lists', () => {
    expect(trayModel({ vms: [], povs: [], jobs: [], now }).items.map((i) => i.kind)).toEqual(['action', 'action']);
    const many = trayModel({
      vms: Array.from({ length: 12 }, (_, i) => ({ id: `${i}`, name: `vm${i}`, state: 'running' })),
      povs: [],
      jobs: [],
      now,
    });
    expect(many.items.filter((i) => i.kind === 'item')).toHaveLength(9);
    expect(many.items.some((i) => i.kind === 'item' && i.label === '… 4 more')).toBe(true);
  });
});

describe("the tray's POVs near auto-delete, from pov.list as the Electron app reads it", () => {
  let w: ShareTestWorld | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it('lists a POV whose armed deletion is within a day, not one in 30 days nor one whose schedule is gone', async () => {
    w = await shareWorld();
    const soonId = await createPov(w, new Date(w.clock.now().getTime() + 6 * HOUR), 'Soon');
    await createPov(w, undefined, 'Default 30 days');
    const goneId = await createPov(w, new Date(w.clock.now().getTime() + 5 * HOUR), 'Schedule gone');
    // The sweep cannot find the third one's schedule any more: not armed, so Skytap will not delete it then.
    w.db.prepare("UPDATE povs SET auto_delete_status = 'not_armed' WHERE id = ?").run(goneId);
    const briefs = povBriefs((await w.call('pov.list', {})).povs);
    expect(briefs.find((b) => b.id === goneId)?.autoDeleteAt).toBeNull();
    const m = trayModel({ vms: [], povs: briefs, jobs: [], now: w.clock.now().getTime() });
    expect(m.items.filter((i) => i.kind === 'header' || i.kind === 'item').map((i) => ('label' in i ? i.label : ''))).toEqual([
      'POVs near auto-delete (1)',
      'Soon — deleted in 6 h',
    ]);
    expect(m.items.find((i) => i.kind === 'item')).toMatchObject({ action: { open: `povs/${soonId}` } });
  }, 60_000);
});

describe('dock/taskbar progress', () => {
  it('is off without running jobs, the mean of known fractions, else indeterminate', () => {
    expect(taskbarProgress([])).toBe(-1);
    expect(taskbarProgress([job('1', 'succeeded', 1), job('2', 'queued', null)])).toBe(-1);
    expect(taskbarProgress([job('1', 'running', 0.2), job('2', 'running', 0.6), job('3', 'running', null)])).toBeCloseTo(0.4);
    expect(taskbarProgress([job('1', 'running', null)])).toBeGreaterThan(1);
    expect(taskbarProgress([job('1', 'running', 0.5, true)])).toBe(-1); // routine sweeps do not count
  });
});
