import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { setTransport } from '../../renderer/src/api';
import { App } from '../../renderer/src/app';
import { testCore } from '../foundation/helpers';
import { coreTransport } from './core-transport';
import { JOB_KIND } from '../../shared/contract/job-kinds';

describe('app shell', () => {
  let core: Core;
  beforeEach(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
  });
  afterEach(async () => {
    cleanup();
    await core.close();
  });

  it('has every section in the sidebar and an honest empty state on Jobs', async () => {
    render(<App />);
    const nav = screen.getByRole('navigation', { name: 'Sections' });
    for (const label of ['POVs', 'Local VMs', 'Templates', 'Jobs', 'Settings']) {
      expect(nav.textContent).toContain(label);
    }
    fireEvent.click(screen.getByRole('button', { name: 'Jobs' }));
    expect(await screen.findByText('No jobs yet')).toBeTruthy();
  });

  it('Settings saves credentials and shows "token set" and the memory-keyring warning', async () => {
    render(<App />);
    fireEvent.click(screen.getByRole('button', { name: 'Settings' }));
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token not set'));
    expect(screen.getByTestId('keyring-warning').textContent).toMatch(/memory for this run only/);
    const form = within(screen.getByRole('form', { name: 'Skytap credentials' }));
    fireEvent.change(form.getByLabelText('Username'), { target: { value: 'me' } });
    fireEvent.change(form.getByLabelText('API token'), { target: { value: 'abc123' } });
    fireEvent.click(form.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token set'));
    expect((form.getByLabelText('API token') as HTMLInputElement).value).toBe('');
  });

  it('the jobs drawer shows live progress and cancels a running job', async () => {
    render(<App />);
    let jobId = '';
    await act(async () => {
      jobId = core.base.jobs.start({ kind: JOB_KIND.povRefreshVms, title: 'Long demo' }, (job) => {
        job.progress('warming up', 0.25, 'a quarter');
        return new Promise((_r, rej) => job.signal.addEventListener('abort', () => rej(job.signal.reason)));
      });
    });
    const bar = await screen.findByRole('progressbar', { name: 'warming up' });
    expect(bar.getAttribute('aria-valuenow')).toBe('25');
    fireEvent.click(screen.getByRole('button', { name: 'Cancel Long demo' }));
    expect((await core.base.jobs.wait(jobId)).state).toBe('cancelled');
    await waitFor(() => expect(screen.queryByTestId('running-job')).toBeNull());
  });
});
