import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { runnerScript } from '../../main/services/control-node/runner';
import { setTransport } from '../../renderer/src/api';
import TemplatesPage from '../../renderer/src/pages/templates-page';
import { testCore } from '../foundation/helpers';
import { coreTransport } from './core-transport';

/**
 * The Templates page's "Bake a template" and baked list against a real core (job runner, the
 * templates handlers). No boot here: a source outside the allowed directories is refused by the
 * real job before anything starts; the baked list reads a manifest and proof from the real home.
 * The bake that boots is test/bake/bake.test.ts.
 */
describe('Templates page: Bake a template', () => {
  let core: Core;
  beforeAll(async () => {
    core = await testCore();
    const dir = join(core.base.home, 'templates', 'baked', 'ctl');
    mkdirSync(dir, { recursive: true });
    const sha = runnerScript().sha256;
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({
        name: 'ctl',
        createdAt: '2026-12-01T10:00:00.000Z',
        source: 'debian:bookworm (abc)',
        baseSha256: 'a'.repeat(64),
        guest: { distro: 'debian', version: '12', product: 'Debian GNU/Linux 12 (bookworm)', codename: 'bookworm' },
        runner: { path: '/usr/local/sbin/dashboard-bootstrap-runner', sha256: sha, unit: 'dashboard-bootstrap-runner.service' },
        docker: 'installed',
        packages: { 'docker.io': '20.10.24+dfsg1-1+deb12u1+b6' },
        cloudInit: 'absent',
        stages: { source: 1 },
      }),
    );
    writeFileSync(
      join(dir, 'proof.json'),
      JSON.stringify({
        passed: true,
        at: '2026-12-01T10:05:00.000Z',
        seconds: 61.2,
        dockerEnabled: 'enabled',
        runnerSha256: sha,
        message: 'the runner fetched the probe from the metadata service and ran it after 61 s; docker.service enabled and a container ran',
        consoleTail: '',
      }),
    );
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    await core.close();
  });

  it('lists the baked template, its manifest and proof; a source outside the allowed dirs fails in the panel with the reason', async () => {
    render(<TemplatesPage />);
    const list = await screen.findByRole('region', { name: 'Baked templates' });
    await waitFor(() => expect(within(list).getByText('ctl')).toBeTruthy());
    expect(within(list).getByText(/proof passed in 61.2 s/)).toBeTruthy();
    expect(within(list).getByLabelText('Build manifest of ctl').textContent).toContain('"docker.io": "20.10.24+dfsg1-1+deb12u1+b6"');
    expect(within(list).getByText(runnerScript().sha256)).toBeTruthy();

    const panel = screen.getByRole('region', { name: 'Bake a template' });
    fireEvent.click(within(panel).getByLabelText(/Image file/));
    const bake = within(panel).getByRole('button', { name: 'Bake' }) as HTMLButtonElement;
    expect(bake.disabled).toBe(true); // no path yet
    fireEvent.change(within(panel).getByLabelText('Image path'), { target: { value: '/etc/hostname' } });
    fireEvent.change(within(panel).getByLabelText('Template name'), { target: { value: 'outside' } });
    fireEvent.click(bake);
    await waitFor(() => expect(within(panel).getByText(/outside the directories a bake may read/)).toBeTruthy(), { timeout: 10_000 });
    expect(within(panel).getByRole('status').textContent).toMatch(/^failed/);
    expect(within(panel).getByLabelText('Bake stages').textContent).toContain('Proof boot');
  });

  it('a bad name never reaches a job: the contract refuses it', async () => {
    const panel = screen.getByRole('region', { name: 'Bake a template' });
    fireEvent.change(within(panel).getByLabelText('Template name'), { target: { value: 'Bad_Name' } });
    fireEvent.click(within(panel).getByRole('button', { name: 'Bake' }));
    await waitFor(() => expect(within(panel).getByRole('alert').textContent).toMatch(/DNS label/));
  });
});
