import { app, BrowserWindow, dialog, ipcMain, powerMonitor, session, shell, type IpcMainEvent, type IpcMainInvokeEvent } from 'electron';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { createCore, type Core } from '../core/create';
import { isAppUrl as isTrustedPageUrl } from './app-url';
import { createDesktop, type Desktop } from './desktop';
import { bindIpc } from './ipc';
import { electronNative } from './native';
import { showOsNotifications } from './notifications';
import { startUpdates } from './updates';

export { isAppUrl as isTrustedPageUrl } from './app-url';

const here = fileURLToPath(new URL('.', import.meta.url));
const RENDERER_URL = process.env.ELECTRON_RENDERER_URL; // set by electron-vite dev only
let core: Core | null = null;
let win: BrowserWindow | null = null;
let desktop: Desktop | null = null; // desktop habits (main/electron/desktop.ts)
let stopUpdates: (() => void) | null = null;

const INDEX_FILE = join(here, '../renderer/index.html');
const isAppUrl = (url: string) => isTrustedPageUrl(url, RENDERER_URL, INDEX_FILE);

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
  else await win.loadFile(INDEX_FILE, hash ? { hash } : {});
}

app.enableSandbox();
// One app per user: a second launch hands over to the first, which comes to the front.
const primary = app.requestSingleInstanceLock();
if (!primary) app.quit();
app.on('second-instance', () => {
  if (!win) return;
  if (win.isMinimized()) win.restore();
  win.show();
  win.focus();
});
app.whenReady().then(async () => {
  if (!primary) return;
  session.defaultSession.webRequest.onHeadersReceived((details, cb) => {
    cb({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CONTENT_SECURITY_POLICY] } });
  });
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  // better-sqlite3 and keytar (Node-API) checked against this Electron's ABI, or a clear refusal.
  const native = electronNative(join(here, '../..'));
  if (!native.ok) {
    console.error(native.message);
    dialog.showErrorBox('POV Desk cannot start', native.message);
    app.exit(1);
    return;
  }
  try {
    core = await createCore({ role: 'app', logName: 'main', native: native.native });
  } catch (err) {
    // Another process (`povdesk serve`, a `povdesk call` running a job) owns the data directory.
    dialog.showErrorBox('POV Desk cannot start', (err as Error).message);
    app.quit();
    return;
  }
  bindIpc({ ipcMain, core, isTrustedSender: trusted });
  // After the laptop wakes, dropped SSH sessions reconnect at once instead of waiting out keepalive.
  const { base, services } = core;
  powerMonitor.on('resume', () => services.ssh.wake());
  desktop = createDesktop({ core, home: base.home, getWindow: () => win, showWindow: createWindow });
  if (pendingUrl) desktop.handleOpenUrl(pendingUrl);
  stopUpdates = startUpdates({
    core,
    isPackaged: app.isPackaged,
    log: (msg, extra) => base.log.info(msg, extra as Record<string, unknown>),
  });
  const customerTz = (povId: string) => {
    try {
      return services.pov.get(povId).pov.customerTz ?? null;
    } catch {
      return null; // the POV is gone: the SE's zone alone
    }
  };
  base.onClose(showOsNotifications(base.hub, () => win, customerTz));
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
