import { cleanup, render, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { setTransport } from '../../renderer/src/api';
import JobsPage from '../../renderer/src/pages/jobs-page';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import { testCore } from '../foundation/helpers';
import { coreTransport } from './core-transport';

describe('Jobs page', () => {
  let core: Core;
  beforeEach(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
  });
  afterEach(async () => {
    cleanup();
    setTransport(null);
    await core.close();
  });

  it('a finished job says how it ended, not the step it was on ("succeeded" is never beside "building")', async () => {
    const ok = core.base.jobs.start({ kind: JOB_KIND.povRefreshVms, title: 'Built fine' }, async (job) => {
      job.progress('building', 0.5, 'half way');
    });
    const bad = core.base.jobs.start({ kind: JOB_KIND.povRefreshVms, title: 'Broke' }, async (job) => {
      job.progress('building', 0.5, 'half way');
      throw new Error('disk full');
    });
    await core.base.jobs.wait(ok);
    await core.base.jobs.wait(bad);
    render(<JobsPage />);
    const row = async (title: string) => (await screen.findByText(title)).closest('tr')!;
    await waitFor(async () => expect((await row('Built fine')).textContent).toContain('succeeded'));
    expect((await row('Built fine')).textContent).not.toContain('building');
    expect((await row('Built fine')).textContent).toContain('done');
    expect((await row('Broke')).textContent).toContain('stopped at: building');
  });
});
