import { app, BrowserWindow, ipcMain, powerMonitor, session, shell, type IpcMainEvent, type IpcMainInvokeEvent } from 'electron';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { createCore, type Core } from '../core/create';
import { sshManagerFor } from '../core/handlers/ssh';
import { bindIpc } from './ipc';
import { showOsNotifications } from './notifications';

const here = fileURLToPath(new URL('.', import.meta.url));
const RENDERER_URL = process.env.ELECTRON_RENDERER_URL; // set by electron-vite dev only
let core: Core | null = null;
let win: BrowserWindow | null = null;

function isAppUrl(url: string): boolean {
  if (RENDERER_URL) return url.startsWith(RENDERER_URL);
  return url.startsWith('file://') && url.includes('/renderer/index.html');
}

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
  else await win.loadFile(join(here, '../renderer/index.html'));
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
  base.onClose(showOsNotifications(base.hub, () => win));
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
