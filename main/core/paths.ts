import { homedir } from 'node:os';
import { join } from 'node:path';

/** POVDESK_HOME, else the platform's app-data directory. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.POVDESK_HOME) return env.POVDESK_HOME;
  switch (process.platform) {
    case 'darwin':
      return join(homedir(), 'Library', 'Application Support', 'POV Desk');
    case 'win32':
      return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'POV Desk');
    default:
      return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'povdesk');
  }
}

export function pathsFor(home: string) {
  return { home, database: join(home, 'povdesk.db'), logs: join(home, 'logs'), run: join(home, 'run') };
}
