import { lazy, type ComponentType } from 'react';
import JobsPage from './jobs-page';
import PovsPage from './povs-page';
import SettingsPage, { settingsSlots } from './settings-page';
import CheckAccounts from './settings/check-accounts';
import ControlNodeSettings from './settings/control-node-settings';
import SkytapTestConnection from './settings/skytap-test-connection';
import TerminalSettings from './settings/terminal-settings';

export interface PageEntry {
  id: string;
  label: string;
  component: ComponentType;
}

// The pages that carry xterm (Templates through the bake's live console) load on first visit,
// keeping it out of the start-up bundle.
const LocalVmsPage = lazy(() => import('./local-vms-page'));
const TemplatesPage = lazy(() => import('./templates-page'));
const TerminalsPage = lazy(() => import('./terminals-page'));

settingsSlots.skytap.push(() => <SkytapTestConnection />);
settingsSlots.more.push(() => <ControlNodeSettings />);
settingsSlots.more.push(() => <TerminalSettings />);
settingsSlots.more.push(() => <CheckAccounts />);

/** The sidebar, in order. */
export const pages: PageEntry[] = [
  { id: 'povs', label: 'POVs', component: PovsPage },
  { id: 'local-vms', label: 'Local VMs', component: LocalVmsPage },
  { id: 'templates', label: 'Templates', component: TemplatesPage },
  { id: 'terminals', label: 'Terminals', component: TerminalsPage },
  { id: 'jobs', label: 'Jobs', component: JobsPage },
  { id: 'settings', label: 'Settings', component: SettingsPage },
];
