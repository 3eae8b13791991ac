import { app, BrowserWindow, ipcMain, powerMonitor, session, shell, type IpcMainEvent, type IpcMainInvokeEvent } from 'electron';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { createCore, type Core } from '../core/create';
import { sshManagerFor } from '../core/handlers/ssh';
import { createDesktop, type Desktop } from './desktop';
import { bindIpc } from './ipc';
import { startUpdates } from './updates';

const here = fileURLToPath(new URL('.', import.meta.url));
const RENDERER_URL = process.env.ELECTRON_RENDERER_URL; // set by electron-vite dev only
let core: Core | null = null;
let win: BrowserWindow | null = null;
let desktop: Desktop | null = null; // desktop habits (main/electron/desktop.ts)
let stopUpdates: (() => void) | null = null;

function isAppUrl(url: string): boolean {
  if (RENDERER_URL) return url.startsWith(RENDERER_URL);
  return url.startsWith('file://') && url.includes('/renderer/index.html');
}

function trusted(event: IpcMainEvent | IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame;
  return !!win && event.sender === win.webContents && !!frame && frame === win.webContents.mainFrame && isAppUrl(frame.url);
}

async function createWindow() {
  const saved = desktop?.windowOptions();
  win = new BrowserWindow({
    width: 1280,
    height: 820,
    ...saved?.bounds,
    show: false,
    title: 'POV Desk',
    webPreferences: {
      preload: join(here, '../preload/index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  win.on('closed', () => (win = null));
  if (desktop) desktop.attach(win);
  else win.once('ready-to-show', () => win?.show());
  // Navigation and new windows are refused; http(s) links open in the OS browser.
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (e, url) => {
    if (!isAppUrl(url)) {
      e.preventDefault();
      if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    }
  });
  const hash = saved?.hash;
  if (RENDERER_URL) await win.loadURL(hash ? `${RENDERER_URL}#${hash}` : RENDERER_URL);
  else await win.loadFile(join(here, '../renderer/index.html'), hash ? { hash } : {});
}

app.enableSandbox();
app.whenReady().then(async () => {
  session.defaultSession.webRequest.onHeadersReceived((details, cb) => {
    cb({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CONTENT_SECURITY_POLICY] } });
  });
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  core = await createCore({ role: 'app', logName: 'main' });
  bindIpc({ ipcMain, core, isTrustedSender: trusted });
  // After the laptop wakes, dropped SSH sessions reconnect at once instead of waiting out keepalive.
  const base = core.base;
  powerMonitor.on('resume', () => sshManagerFor(base).wake());
  desktop = createDesktop({ core, home: base.home, getWindow: () => win, showWindow: createWindow });
  if (pendingUrl) desktop.handleOpenUrl(pendingUrl);
  stopUpdates = startUpdates({ core, isPackaged: app.isPackaged, log: (msg, extra) => base.log.info(msg, extra as Record<string, unknown>) });
  await createWindow();
});

// ---- desktop habits: povdesk:// links (macOS open-url; Windows/Linux pass them to a second launch) ----
let pendingUrl: string | null = null;
app.on('open-url', (e, url) => {
  e.preventDefault();
  if (desktop) desktop.handleOpenUrl(url);
  else pendingUrl = url;
});
app.on('second-instance', (_e, argv) => desktop?.handleArgv(argv));
app.on('activate', () => {
  if (!win && desktop) void createWindow();
});

app.on('web-contents-created', (_e, contents) => {
  contents.on('will-attach-webview', (e) => e.preventDefault());
});
app.on('window-all-closed', () => {
  if (!desktop || desktop.shouldQuitOnAllClosed()) app.quit();
});
app.on('before-quit', (e) => {
  if (!core) return;
  e.preventDefault();
  if (desktop && !desktop.readyToQuit()) return; // it asks about running VMs, then quits again
  desktop?.dispose();
  stopUpdates?.();
  const c = core;
  core = null;
  void c.close().finally(() => app.quit());
});
