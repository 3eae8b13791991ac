import type { EmulatorState } from './state';

/**
 * Seeds for the emulator. Templates carry VMs whose hardware.guestOS varies (Linux, Windows,
 * blank, unrecognised) so OS inference is exercised end to end.
 */
export const SEEDS = {
  /** Nothing at all: an account that authenticates but can see no templates. */
  empty(): void {},

  /** Three templates, one in project 77; a realistic POV catalogue. */
  demo(state: EmulatorState): void {
    state.addProject('77');
    state.addTemplate({
      name: 'PAM POV – Linux + Windows',
      description: 'Control node, a Windows jump host and two Linux targets',
      projects: ['77'],
      vms: [
        { name: 'control-node', guestOS: 'ubuntu-64' },
        { name: 'win-jump', guestOS: 'windows2019srv-64' },
        { name: 'rhel-target', guestOS: 'rhel8-64' },
        { name: 'appliance', guestOS: '' },
      ],
    });
    state.addTemplate({
      name: 'Windows AD lab',
      vms: [
        { name: 'dc01', guestOS: 'windows9srv-64' },
        { name: 'member01', guestOS: 'windows9-64' },
      ],
    });
    state.addTemplate({
      name: 'Odd guests',
      vms: [
        { name: 'solaris', guestOS: 'solaris10-64' },
        { name: 'mystery', guestOS: null },
        { name: 'centos', guestOS: 'centos-64', networkType: 'manual', ip: null, hostname: null },
      ],
    });
  },

  /** `count` ready environments (for the sweep bench and list tests), all from one template. */
  many(state: EmulatorState, count: number): void {
    const t = state.addTemplate({ name: 'Bulk template', vms: [{ name: 'vm', guestOS: 'centos-64' }] });
    for (let i = 0; i < count; i++) state.addEnvironment({ name: `env-${i}`, templateId: t.id, runstate: 'running' });
  },
};

export type SeedName = 'empty' | 'demo' | `many:${number}`;

export function applySeed(state: EmulatorState, name: string): void {
  if (name === 'empty') return SEEDS.empty();
  if (name === 'demo') return SEEDS.demo(state);
  const m = /^many:(\d{1,6})$/.exec(name);
  if (m) return SEEDS.many(state, Number(m[1]));
  throw new Error(`unknown seed "${name}": use empty, demo or many:<N>`);
}
