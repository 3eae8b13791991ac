/**
 * What the desktop app does when a window closes, the user quits, the app is launched (at login or
 * by hand, with or without a povdesk:// link), decided without Electron so it is unit-tested.
 * main/electron/desktop.ts carries the decisions out.
 *
 * The rules: VMs run in the vm-manager, a process of their own, so closing the window or quitting
 * the app never stops them unless the user says so; a launch never starts a VM (a VM the user
 * stopped stays stopped, whether the app was started at login or by hand).
 */
import { LIVE_VM_STATES } from '../../shared/vm-states';

export interface VmBrief {
  id: string;
  name: string;
  state: string;
}

/** Closing the last window: keep running in the tray/menu bar when there is one (and on macOS as usual); else quit. */
export function onWindowClosed(o: { platform: NodeJS.Platform; hasTray: boolean; quitting: boolean }): 'stay' | 'quit' {
  if (o.quitting) return 'quit';
  return o.hasTray || o.platform === 'darwin' ? 'stay' : 'quit';
}

export type QuitAnswer = 'keep' | 'stop' | 'cancel';

/** The question asked when the user quits with local VMs running; null when there is nothing to ask. */
export function quitQuestion(vms: VmBrief[]): { message: string; detail: string; buttons: { label: string; answer: QuitAnswer }[] } | null {
  const live = vms.filter((v) => LIVE_VM_STATES.includes(v.state));
  if (live.length === 0) return null;
  const names =
    live
      .map((v) => v.name)
      .slice(0, 5)
      .join(', ') + (live.length > 5 ? ` and ${live.length - 5} more` : '');
  return {
    message: live.length === 1 ? `1 local VM is running (${names}).` : `${live.length} local VMs are running (${names}).`,
    detail: 'They can keep running after POV Desk quits (you will find them here next time), or be shut down now.',
    buttons: [
      { label: 'Keep them running', answer: 'keep' },
      { label: 'Stop them and quit', answer: 'stop' },
      { label: 'Cancel', answer: 'cancel' },
    ],
  };
}

/** What a quit does given the answer: which VMs to stop first, and whether to quit at all. */
export function quitPlan(vms: VmBrief[], answer: QuitAnswer | null): { quit: boolean; stop: string[] } {
  const live = vms.filter((v) => LIVE_VM_STATES.includes(v.state)).map((v) => v.id);
  if (live.length === 0 || answer === 'keep') return { quit: true, stop: [] };
  if (answer === 'stop') return { quit: true, stop: live };
  return { quit: false, stop: [] };
}

export interface LaunchSettings {
  openAtLogin: boolean;
  startInBackground: boolean;
}
export const DEFAULT_LAUNCH_SETTINGS: LaunchSettings = { openAtLogin: false, startInBackground: false };
export const BACKGROUND_FLAG = '--background';

/** Arguments for Electron's app.setLoginItemSettings. */
export function loginItemSettings(
  s: LaunchSettings,
  platform: NodeJS.Platform,
): { openAtLogin: boolean; openAsHidden?: boolean; args?: string[] } {
  if (platform === 'darwin') return { openAtLogin: s.openAtLogin, openAsHidden: s.startInBackground };
  return { openAtLogin: s.openAtLogin, args: s.startInBackground ? [BACKGROUND_FLAG] : [] };
}

export interface LaunchPlan {
  /** Show the main window now (false: only the tray/menu-bar icon). */
  showWindow: boolean;
  /** A POV to open, from a povdesk:// link. */
  openPov: string | null;
  /** VMs to start because of this launch: always none (see the module comment). */
  startVms: string[];
}

/** What a launch does, from its argv and whether the OS started it at login. */
export function launchPlan(argv: string[], o: { openedAtLogin: boolean; settings: LaunchSettings }): LaunchPlan {
  const link = deepLinkFromArgv(argv);
  const background = !link && (argv.includes(BACKGROUND_FLAG) || (o.openedAtLogin && o.settings.startInBackground));
  return { showWindow: !background, openPov: link?.povId ?? null, startVms: [] };
}

const POV_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A povdesk:// link, validated: only povdesk://pov/<id> exists; anything else is refused (null). */
export function parseDeepLink(raw: string): { povId: string } | null {
  if (raw.length > 300) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.protocol !== 'povdesk:' || u.username || u.password || u.port || u.search || u.hash) return null;
  // povdesk://pov/<id>: WHATWG puts "pov" in the host; accept povdesk:pov/<id> (host empty) too.
  const parts = `${u.host}${u.pathname}`.split('/').filter((p) => p !== '');
  if (parts.length !== 2 || parts[0]!.toLowerCase() !== 'pov') return null;
  const id = decodeURIComponent(parts[1]!);
  return POV_ID.test(id) ? { povId: id } : null;
}

/** The first povdesk:// link among a launch's or a second instance's arguments (Windows and Linux pass it there). */
export function deepLinkFromArgv(argv: string[]): { povId: string } | null {
  for (const a of argv) {
    if (!a.toLowerCase().startsWith('povdesk:')) continue;
    const link = parseDeepLink(a);
    if (link) return link;
  }
  return null;
}

/** The renderer URL hash that opens a POV (the POVs page; the id after it). */
export function povHash(povId: string): string {
  return `/povs/${encodeURIComponent(povId)}`;
}
