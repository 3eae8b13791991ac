/**
 * The desktop habits, carried out with Electron; every decision is made by the plain
 * modules in main/desktop/ (unit-tested in test/desktop/), so this file only wires them:
 * window size/position/last page, the tray/menu-bar icon, closing and quitting with VMs running,
 * start at login / in background, povdesk:// links, dock/taskbar progress, and the
 * "Install command-line tool" menu item. main/electron/index.ts calls in through small hooks.
 * Never run on a real Electron yet (docs/open-work.md); test/e2e/desktop.spec.ts covers it there.
 */
import { app, BrowserWindow, dialog, Menu, screen, Tray, type MenuItemConstructorOptions } from 'electron';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import type { Core } from '../core/create';
import type { CallInfo } from '../core/dispatch';
import { cliInstallPlan } from '../desktop/cli-install';
import {
  DEFAULT_LAUNCH_SETTINGS,
  deepLinkFromArgv,
  launchPlan,
  loginItemSettings,
  onWindowClosed,
  parseDeepLink,
  povHash,
  quitPlan,
  quitQuestion,
  type LaunchSettings,
  type QuitAnswer,
  type VmBrief,
} from '../desktop/lifecycle';
import { povBriefs, taskbarProgress, trayModel, type PovBrief } from '../desktop/status';
import { loadWindowState, pageFromUrl, restoreBounds, saveWindowState, windowStateFile, type WindowState } from '../desktop/window-state';
import type { JobRecord } from '../../shared/contract/core';
import type { PovView } from '../../shared/contract/pov';

const CALL: CallInfo = { transport: 'ipc' };
const REFRESH_MS = 3000;
const launchSettingsSchema = lazySchema(() => z.object({ openAtLogin: z.boolean(), startInBackground: z.boolean() }).strict());

export interface Desktop {
  /** BrowserWindow bounds and the page (renderer hash) to open. */
  windowOptions(): { bounds: ReturnType<typeof restoreBounds>; maximized: boolean; hash: string | undefined };
  /** Starts tracking the window (state, progress) once created; shows it unless this launch is in background. */
  attach(win: BrowserWindow): void;
  /** window-all-closed: whether to quit. */
  shouldQuitOnAllClosed(): boolean;
  /** before-quit: true when quitting may go on now; false after it started asking (it quits by itself later). */
  readyToQuit(): boolean;
  /** A second launch's argv or a macOS open-url: focus, and open a povdesk:// link. */
  handleArgv(argv: string[]): void;
  handleOpenUrl(url: string): void;
  dispose(): void;
}

function iconPath(name: string): string {
  const packaged = join(process.resourcesPath ?? '', 'icons', name);
  return existsSync(packaged) ? packaged : join(app.getAppPath(), 'resources', 'icons', name);
}

export function createDesktop(o: {
  core: Core;
  home: string;
  getWindow: () => BrowserWindow | null;
  showWindow: () => Promise<void>;
}): Desktop {
  const stateFile = windowStateFile(o.home);
  const launchFile = join(o.home, 'launch-settings.json');
  let saved: WindowState | null = loadWindowState(stateFile);
  let tray: Tray | null = null;
  let quitApproved = false;
  let asking = false;
  let timer: NodeJS.Timeout | null = null;
  let pendingPov: string | null = null;

  const readLaunch = (): LaunchSettings => {
    try {
      return launchSettingsSchema.parse(JSON.parse(readFileSync(launchFile, 'utf8')));
    } catch {
      return DEFAULT_LAUNCH_SETTINGS;
    }
  };
  const writeLaunch = (s: LaunchSettings) => {
    writeFileSync(`${launchFile}.tmp`, JSON.stringify(s), { mode: 0o600 });
    renameSync(`${launchFile}.tmp`, launchFile);
    app.setLoginItemSettings(loginItemSettings(s, process.platform));
  };
  const openedAtLogin = process.platform === 'darwin' ? app.getLoginItemSettings().wasOpenedAtLogin === true : false;
  const plan = launchPlan(process.argv, { openedAtLogin, settings: readLaunch() });
  pendingPov = plan.openPov;

  const call = async <T>(method: string, args: object, pick: (r: never) => T, fallback: T): Promise<T> => {
    try {
      return pick((await o.core.dispatcher.call(method, args, CALL)) as never);
    } catch {
      return fallback; // e.g. the vm-manager is not running: nothing to show
    }
  };
  const lists = async () => {
    const [vms, povs, jobs] = await Promise.all([
      call<VmBrief[]>('vm.list', {}, (r: { vms: VmBrief[] }) => r.vms, []),
      call<PovBrief[]>('pov.list', {}, (r: { povs: PovView[] }) => povBriefs(r.povs), []),
      call<JobRecord[]>('jobs.list', { limit: 200 }, (r: { jobs: JobRecord[] }) => r.jobs, []),
    ]);
    return { vms, povs, jobs };
  };

  const navigate = (hash: string) => {
    const win = o.getWindow();
    if (!win) return;
    const page = hash.split('/')[1] ?? '';
    // hash is built from a validated page id / POV id (lifecycle.ts), never from raw input.
    void win.webContents.executeJavaScript(
      `history.replaceState(null, '', ${JSON.stringify(`#${hash}`)}); window.dispatchEvent(new CustomEvent('povdesk-navigate', { ` +
        `detail: ${JSON.stringify(page)} }));`,
    );
  };
  const focus = async () => {
    if (!o.getWindow()) await o.showWindow();
    const win = o.getWindow();
    if (!win) return;
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  };
  const openPov = async (id: string) => {
    await focus();
    navigate(povHash(id));
  };

  const refresh = async () => {
    const { vms, povs, jobs } = await lists();
    o.getWindow()?.setProgressBar(taskbarProgress(jobs));
    if (!tray) return;
    const model = trayModel({ vms, povs, jobs, now: Date.now() });
    const launch = readLaunch();
    const items: MenuItemConstructorOptions[] = model.items.map((i) => {
      if (i.kind === 'separator') return { type: 'separator' };
      if (i.kind === 'header') return { label: i.label, enabled: false };
      if (i.kind === 'item')
        return {
          label: i.label,
          click: i.action ? () => void focus().then(() => navigate(`/${i.action!.open}`)) : undefined,
          enabled: !!i.action,
        };
      return { label: i.label, click: i.action === 'quit' ? () => app.quit() : () => void focus() };
    });
    const quitAt = items.length - 1;
    items.splice(
      quitAt,
      0,
      { type: 'separator' },
      {
        label: 'Start at login',
        type: 'checkbox',
        checked: launch.openAtLogin,
        click: (m) => writeLaunch({ ...readLaunch(), openAtLogin: m.checked }),
      },
      {
        label: 'Start in background',
        type: 'checkbox',
        checked: launch.startInBackground,
        click: (m) => writeLaunch({ ...readLaunch(), startInBackground: m.checked }),
      },
      { label: 'Install command-line tool…', click: () => void installCli() },
    );
    tray.setToolTip(model.tooltip);
    tray.setContextMenu(Menu.buildFromTemplate(items));
  };

  const installCli = async () => {
    const plan = cliInstallPlan({
      platform: process.platform,
      resourcesPath: process.resourcesPath,
      home: app.getPath('home'),
      appImage: process.env.APPIMAGE,
    });
    try {
      if (plan.kind === 'symlink') {
        mkdirSync(dirname(plan.link), { recursive: true });
        symlinkSync(plan.target, plan.link);
      } else if (plan.kind === 'appimage') {
        mkdirSync(dirname(plan.script), { recursive: true });
        mkdirSync(dirname(plan.bootstrapTo), { recursive: true });
        copyFileSync(plan.bootstrapFrom, plan.bootstrapTo);
        writeFileSync(plan.script, plan.content, { mode: 0o755 });
      }
      const where = plan.kind === 'symlink' ? plan.link : plan.kind === 'appimage' ? plan.script : null;
      await dialog.showMessageBox({
        type: 'info',
        message: where ? `povdesk is installed at ${where}.` : plan.kind === 'none' ? plan.reason : '',
        detail: where ? 'Open a new terminal and run: povdesk --help' : undefined,
      });
    } catch (e) {
      const detail = plan.kind === 'symlink' ? `Run this in a terminal instead:\n${plan.sudoCommand}` : String((e as Error).message);
      await dialog.showMessageBox({ type: 'warning', message: `Could not install the command-line tool: ${(e as Error).message}`, detail });
    }
  };

  const askAndQuit = async () => {
    asking = true;
    try {
      const { vms } = await lists();
      const q = quitQuestion(vms);
      let answer: QuitAnswer | null = null;
      if (q) {
        const r = await dialog.showMessageBox({
          type: 'question',
          message: q.message,
          detail: q.detail,
          buttons: q.buttons.map((b) => b.label),
          cancelId: 2,
          defaultId: 0,
          noLink: true,
        });
        answer = q.buttons[r.response]?.answer ?? 'cancel';
      }
      const p = quitPlan(vms, answer);
      if (!p.quit) return;
      await Promise.all(p.stop.map((id) => o.core.dispatcher.call('vm.stop', { id }, CALL).catch(() => undefined)));
      quitApproved = true;
      app.quit();
    } finally {
      asking = false;
    }
  };

  try {
    tray = new Tray(iconPath(process.platform === 'darwin' ? 'trayTemplate.png' : 'tray.png'));
    tray.on('click', () => void focus());
  } catch {
    tray = null; // some Linux desktops have no tray; closing the window then quits (VMs keep running)
  }
  if (process.platform === 'darwin') {
    const appMenu = Menu.getApplicationMenu();
    const extra = Menu.buildFromTemplate([
      { label: 'POV Desk', submenu: [{ label: 'Install command-line tool…', click: () => void installCli() }] },
    ]);
    if (!appMenu) Menu.setApplicationMenu(extra);
  }
  if (!app.isDefaultProtocolClient('povdesk')) {
    // In development the link must start Electron with the app's path; the installers register the packaged app.
    if (process.defaultApp && process.argv[1]) app.setAsDefaultProtocolClient('povdesk', process.execPath, [process.argv[1]]);
    else app.setAsDefaultProtocolClient('povdesk');
  }
  timer = setInterval(() => void refresh(), REFRESH_MS);
  void refresh();

  return {
    windowOptions() {
      const areas = screen.getAllDisplays().map((d) => d.workArea);
      return {
        bounds: restoreBounds(saved, areas),
        maximized: saved?.maximized ?? false,
        hash: pendingPov ? povHash(pendingPov) : saved?.lastPage ? `/${saved.lastPage}` : undefined,
      };
    },
    attach(win) {
      pendingPov = null;
      let saveTimer: NodeJS.Timeout | null = null;
      const save = () => {
        if (win.isDestroyed()) return;
        const next: WindowState = {
          bounds: win.isMaximized() ? (saved?.bounds ?? win.getNormalBounds()) : win.getBounds(),
          maximized: win.isMaximized(),
          lastPage: pageFromUrl(win.webContents.getURL()) ?? saved?.lastPage ?? null,
        };
        try {
          saveWindowState(stateFile, next);
          saved = next;
        } catch {
          // an odd size (e.g. minimized to 0×0) is not worth keeping
        }
      };
      const soon = () => {
        if (saveTimer) clearTimeout(saveTimer);
        saveTimer = setTimeout(save, 500);
      };
      for (const ev of ['resize', 'move', 'maximize', 'unmaximize'] as const) win.on(ev as 'resize', soon);
      win.webContents.on('did-navigate-in-page', soon);
      win.on('close', save);
      if (saved?.maximized) win.maximize();
      if (plan.showWindow) win.once('ready-to-show', () => win.show());
      plan.showWindow = true; // a later window (tray "Open") always shows
      void refresh();
    },
    shouldQuitOnAllClosed() {
      return onWindowClosed({ platform: process.platform, hasTray: tray !== null, quitting: quitApproved }) === 'quit';
    },
    readyToQuit() {
      if (quitApproved) return true;
      if (!asking) void askAndQuit();
      return false;
    },
    handleArgv(argv) {
      const link = deepLinkFromArgv(argv);
      if (link) void openPov(link.povId);
      else void focus();
    },
    handleOpenUrl(url) {
      const link = parseDeepLink(url);
      if (!link) return;
      if (!o.getWindow()) pendingPov = link.povId;
      else void openPov(link.povId);
    },
    dispose() {
      if (timer) clearInterval(timer);
      tray?.destroy();
      tray = null;
    },
  };
}
