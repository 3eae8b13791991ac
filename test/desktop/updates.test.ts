import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../shared/contract/core';
import { mayRestartNow, REMIND_AFTER_MS, updateAction, updatesEnabled } from '../../main/desktop/updates';

const job = (state: JobRecord['state']): JobRecord => ({
  id: 'j',
  kind: 'pov.create',
  title: 'Create POV Acme',
  subject: null,
  routine: false,
  state,
  progress: { step: 's', fraction: 0.5, message: '' },
  createdAt: '2026-12-01T11:00:00Z',
  startedAt: null,
  finishedAt: null,
  error: null,
  result: null,
});
const now = 1_000_000_000;

describe('updates', () => {
  it('are off in development and when POVDESK_NO_UPDATES=1', () => {
    expect(updatesEnabled({ isPackaged: false, env: {} })).toMatchObject({ enabled: false });
    expect(updatesEnabled({ isPackaged: true, env: { POVDESK_NO_UPDATES: '1' } })).toMatchObject({ enabled: false });
    expect(updatesEnabled({ isPackaged: true, env: {} })).toMatchObject({ enabled: true });
  });

  it('offer "restart to update" only when no job runs or waits, and not again soon after Later', () => {
    expect(updateAction({ ready: null, laterAt: null }, [], now)).toEqual({ kind: 'none' });
    expect(updateAction({ ready: '0.2.0', laterAt: null }, [], now)).toEqual({ kind: 'offer', version: '0.2.0' });
    expect(updateAction({ ready: '0.2.0', laterAt: null }, [job('running')], now)).toEqual({
      kind: 'wait',
      why: '1 job in progress (Create POV Acme); the update waits until they finish',
    });
    expect(updateAction({ ready: '0.2.0', laterAt: null }, [job('queued'), job('running')], now).kind).toBe('wait');
    expect(updateAction({ ready: '0.2.0', laterAt: null }, [job('succeeded'), job('failed')], now).kind).toBe('offer');
    expect(updateAction({ ready: '0.2.0', laterAt: now - 1000 }, [], now).kind).toBe('wait');
    expect(updateAction({ ready: '0.2.0', laterAt: now - REMIND_AFTER_MS }, [], now).kind).toBe('offer');
  });

  it('does not restart if a job started while the prompt was open', () => {
    expect(mayRestartNow([])).toBe(true);
    expect(mayRestartNow([job('running')])).toBe(false);
  });
});
