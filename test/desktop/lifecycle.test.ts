import { describe, expect, it } from 'vitest';
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
} from '../../main/desktop/lifecycle';

const vms = [
  { id: 'a', name: 'dc01', state: 'running' },
  { id: 'b', name: 'web', state: 'stopped' },
  { id: 'c', name: 'db', state: 'booting' },
];

describe('closing and quitting', () => {
  it('closing the window keeps the app (and so its VMs) when there is a tray, or on macOS', () => {
    expect(onWindowClosed({ platform: 'linux', hasTray: true, quitting: false })).toBe('stay');
    expect(onWindowClosed({ platform: 'darwin', hasTray: false, quitting: false })).toBe('stay');
    expect(onWindowClosed({ platform: 'win32', hasTray: false, quitting: false })).toBe('quit');
    expect(onWindowClosed({ platform: 'linux', hasTray: true, quitting: true })).toBe('quit');
  });

  it('asks keep/stop/cancel only when local VMs run, naming them', () => {
    expect(quitQuestion([{ id: 'b', name: 'web', state: 'stopped' }])).toBeNull();
    const q = quitQuestion(vms)!;
    expect(q.message).toBe('2 local VMs are running (dc01, db).');
    expect(q.buttons.map((b) => b.answer)).toEqual(['keep', 'stop', 'cancel']);
    const many = Array.from({ length: 7 }, (_, i) => ({ id: `v${i}`, name: `vm${i}`, state: 'running' }));
    expect(quitQuestion(many)!.message).toMatch(/7 local VMs .*and 2 more/);
  });

  it('keep leaves VMs running, stop stops only the live ones, cancel does not quit', () => {
    expect(quitPlan(vms, 'keep')).toEqual({ quit: true, stop: [] });
    expect(quitPlan(vms, 'stop')).toEqual({ quit: true, stop: ['a', 'c'] });
    expect(quitPlan(vms, 'cancel')).toEqual({ quit: false, stop: [] });
    expect(quitPlan(vms, null)).toEqual({ quit: false, stop: [] }); // dialog dismissed
    expect(quitPlan([vms[1]!], null)).toEqual({ quit: true, stop: [] });
  });
});

describe('launching', () => {
  it('start at login is off by default; start in background hides the window (macOS: openAsHidden; others: a flag)', () => {
    expect(DEFAULT_LAUNCH_SETTINGS).toEqual({ openAtLogin: false, startInBackground: false });
    expect(loginItemSettings({ openAtLogin: true, startInBackground: true }, 'darwin')).toEqual({ openAtLogin: true, openAsHidden: true });
    expect(loginItemSettings({ openAtLogin: true, startInBackground: true }, 'win32')).toEqual({
      openAtLogin: true,
      args: ['--background'],
    });
    expect(loginItemSettings(DEFAULT_LAUNCH_SETTINGS, 'linux')).toEqual({ openAtLogin: false, args: [] });
  });

  it('shows the window unless started in background; a launch never starts a VM', () => {
    const s = { openAtLogin: true, startInBackground: true };
    expect(launchPlan(['povdesk-desktop'], { openedAtLogin: false, settings: s })).toEqual({
      showWindow: true,
      openPov: null,
      startVms: [],
    });
    expect(launchPlan(['povdesk-desktop'], { openedAtLogin: true, settings: s })).toEqual({
      showWindow: false,
      openPov: null,
      startVms: [],
    });
    expect(launchPlan(['povdesk-desktop', '--background'], { openedAtLogin: false, settings: DEFAULT_LAUNCH_SETTINGS }).showWindow).toBe(
      false,
    );
    expect(launchPlan(['povdesk-desktop', '--background', 'povdesk://pov/p-1'], { openedAtLogin: true, settings: s })).toEqual({
      showWindow: true,
      openPov: 'p-1',
      startVms: [],
    });
  });
});

describe('povdesk:// links', () => {
  it('opens povdesk://pov/<id> and refuses everything else', () => {
    expect(parseDeepLink('povdesk://pov/7f3a-b_2')).toEqual({ povId: '7f3a-b_2' });
    expect(parseDeepLink('povdesk://POV/abc/')).toEqual({ povId: 'abc' });
    for (const bad of [
      'povdesk://pov/',
      'povdesk://pov/a/b',
      'povdesk://settings/x',
      'https://pov/abc',
      'povdesk://pov/..',
      'povdesk://pov/a%2Fb',
      'povdesk://pov/abc?x=1',
      'povdesk://u:p@pov/abc',
      'povdesk://pov/<script>',
      `povdesk://pov/${'a'.repeat(300)}`,
      'not a url',
    ]) {
      expect(parseDeepLink(bad), bad).toBeNull();
    }
  });

  it('finds the link among a second instance’s arguments, and makes the renderer hash for it', () => {
    expect(deepLinkFromArgv(['/opt/POV Desk/povdesk-desktop', '--no-sandbox', 'povdesk://pov/abc'])).toEqual({ povId: 'abc' });
    expect(deepLinkFromArgv(['povdesk-desktop', 'povdesk://evil/abc'])).toBeNull();
    expect(povHash('abc')).toBe('/povs/abc');
  });
});
