import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { setTransport } from '../../renderer/src/api';
import { App } from '../../renderer/src/app';
import JobsPage from '../../renderer/src/pages/jobs-page';
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

  it('the keyring banner is one line that can be dismissed for the session', async () => {
    sessionStorage.clear();
    window.history.replaceState(null, '', '#/povs');
    const { unmount } = render(<App />);
    const banner = await screen.findByTestId('keyring-warning');
    expect(banner.className).toContain('banner-line');
    fireEvent.click(within(banner).getByRole('button', { name: 'Dismiss' }));
    expect(screen.queryByTestId('keyring-warning')).toBeNull();
    unmount();
    render(<App />);
    await screen.findByRole('heading', { name: 'POVs' });
    await act(async () => new Promise((r) => setTimeout(r, 50))); // settings.get has answered
    expect(screen.queryByTestId('keyring-warning')).toBeNull();
    sessionStorage.clear();
  });

  it("the bell is the app's own icon in the sidebar, no emoji, and Escape closes its panel", async () => {
    render(<App />);
    const nav = screen.getByRole('navigation', { name: 'Sections' });
    const bell = within(nav).getByRole('button', { name: /^Notifications \(\d+ unread\)$/ });
    expect(bell.querySelector('svg')).not.toBeNull();
    expect(bell.textContent).not.toMatch(/\p{Extended_Pictographic}/u);
    fireEvent.click(bell);
    expect(screen.getByRole('region', { name: 'Notifications' })).toBeTruthy();
    fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(screen.queryByRole('region', { name: 'Notifications' })).toBeNull();
    expect(document.activeElement).toBe(bell);
  });

  it("the sidebar's POVs goes back to the list from a POV's page", async () => {
    window.history.replaceState(null, '', '#/povs/p-none');
    render(<App />);
    // the POV page (here: its error, the POV does not exist) is open
    expect(await screen.findByRole('button', { name: '← POVs' })).toBeTruthy();
    fireEvent.click(within(screen.getByRole('navigation', { name: 'Sections' })).getByRole('button', { name: 'POVs' }));
    await waitFor(() => expect(screen.queryByRole('button', { name: '← POVs' })).toBeNull());
    expect(await screen.findByRole('heading', { name: 'POVs' })).toBeTruthy();
    expect(window.location.hash).toBe('#/povs');
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
