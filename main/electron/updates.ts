/**
 * electron-updater against the GitHub release feed the release workflow publishes (latest*.yml),
 * checked at start and every few hours in a packaged build only. A downloaded update is offered as
 * "Restart to update" only while no job runs or waits (main/desktop/updates.ts decides; unit-tested),
 * so a restart never interrupts one. Never run on a real Electron yet (docs/open-work.md).
 */
import { dialog } from 'electron';
import electronUpdater from 'electron-updater';
import type { Core } from '../core/create';
import { CHECK_EVERY_MS, mayRestartNow, updateAction, updatesEnabled, type UpdateState } from '../desktop/updates';
import type { JobRecord } from '../../shared/contract/core';

const POLL_MS = 60_000;

export function startUpdates(o: { core: Core; isPackaged: boolean; log: (msg: string, extra?: object) => void }): () => void {
  const on = updatesEnabled({ isPackaged: o.isPackaged, env: process.env });
  if (!on.enabled) {
    o.log('updates off', { reason: on.reason });
    return () => undefined;
  }
  const { autoUpdater } = electronUpdater;
  const state: UpdateState = { ready: null, laterAt: null };
  let prompting = false;
  autoUpdater.autoDownload = true;
  autoUpdater.autoInstallOnAppQuit = true;
  autoUpdater.on('update-downloaded', (info: { version: string }) => {
    state.ready = info.version;
    state.laterAt = null;
    void maybeOffer();
  });
  autoUpdater.on('error', (e: Error) => o.log('update check failed', { error: e.message }));

  const jobs = async (): Promise<JobRecord[]> => {
    const r = (await o.core.dispatcher.call('jobs.list', { limit: 200 }, { transport: 'ipc' })) as { jobs: JobRecord[] };
    return r.jobs;
  };
  const maybeOffer = async () => {
    if (prompting) return;
    const action = updateAction(state, await jobs(), Date.now());
    if (action.kind === 'wait') o.log('update waits', { why: action.why });
    if (action.kind !== 'offer') return;
    prompting = true;
    try {
      const r = await dialog.showMessageBox({
        type: 'info',
        message: `POV Desk ${action.version} is ready.`,
        detail: 'Restart to update. Local VMs keep running through the restart.',
        buttons: ['Restart now', 'Later'],
        defaultId: 0,
        cancelId: 1,
        noLink: true,
      });
      if (r.response !== 0) state.laterAt = Date.now();
      else if (mayRestartNow(await jobs())) autoUpdater.quitAndInstall();
      // else a job started while the dialog was open: the next poll offers again once it ends
    } finally {
      prompting = false;
    }
  };

  const check = () => void autoUpdater.checkForUpdates().catch((e: Error) => o.log('update check failed', { error: e.message }));
  check();
  const checks = setInterval(check, CHECK_EVERY_MS);
  const polls = setInterval(() => void maybeOffer().catch(() => undefined), POLL_MS);
  return () => {
    clearInterval(checks);
    clearInterval(polls);
  };
}
