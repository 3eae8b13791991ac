import { app, BrowserWindow, dialog, ipcMain, powerMonitor, session, shell, type IpcMainEvent, type IpcMainInvokeEvent } from 'electron';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { createCore, type Core } from '../core/create';
import { sshManagerFor } from '../core/handlers/ssh';
import { isAppUrl as isTrustedPageUrl } from './app-url';
import { bindIpc } from './ipc';
import { electronNative } from './native';

export { isAppUrl as isTrustedPageUrl } from './app-url';

const here = fileURLToPath(new URL('.', import.meta.url));
const RENDERER_URL = process.env.ELECTRON_RENDERER_URL; // set by electron-vite dev only
let core: Core | null = null;
let win: BrowserWindow | null = null;

const INDEX_FILE = join(here, '../renderer/index.html');
const isAppUrl = (url: string) => isTrustedPageUrl(url, RENDERER_URL, INDEX_FILE);

function trusted(event: IpcMainEvent | IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame;
  return !!win && event.sender === win.webContents && !!frame && frame === win.webContents.mainFrame && isAppUrl(frame.url);
}

async function createWindow() {
  win = new BrowserWindow({
    width: 1280,
    height: 820,
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
  win.once('ready-to-show', () => win?.show());
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
  if (RENDERER_URL) await win.loadURL(RENDERER_URL);
  else await win.loadFile(INDEX_FILE);
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
  // better-sqlite3 and keytar as built for this Electron's ABI, or a clear refusal (issue 10 item 3).
  const native = electronNative(process.env, join(here, '../..'));
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
  const base = core.base;
  powerMonitor.on('resume', () => sshManagerFor(base).wake());
  await createWindow();
});

app.on('web-contents-created', (_e, contents) => {
  contents.on('will-attach-webview', (e) => e.preventDefault());
});
app.on('window-all-closed', () => app.quit());
app.on('before-quit', (e) => {
  if (!core) return;
  e.preventDefault();
  const c = core;
  core = null;
  void c.close().finally(() => app.quit());
});
