import { spawn } from 'node:child_process';
import type { Logger } from '../services/log/logger';

/** Opens a URL in the OS's default browser; failure is logged, not fatal. */
export function openInBrowser(url: string, log: Logger): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(cmd as string, args as string[], { detached: true, stdio: 'ignore' });
    child.on('error', (e) => log.warn('could not open a browser', { error: e.message }));
    child.unref();
  } catch (e) {
    log.warn('could not open a browser', { error: (e as Error).message });
  }
}
