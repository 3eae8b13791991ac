import { lazy, type ComponentType } from 'react';
import JobsPage from './JobsPage';
import PovsPage from './PovsPage';
import SettingsPage, { settingsSlots } from './SettingsPage';
import ControlNodeSettings from './settings/ControlNodeSettings';
import SkytapTestConnection from './settings/SkytapTestConnection';

export interface PageEntry {
  id: string;
  label: string;
  component: ComponentType;
}

// The pages that carry xterm (Templates through the bake's live console) load on first visit,
// keeping it out of the start-up bundle.
const LocalVmsPage = lazy(() => import('./LocalVmsPage'));
const TemplatesPage = lazy(() => import('./TemplatesPage'));
const TerminalsPage = lazy(() => import('./TerminalsPage'));

settingsSlots.skytap.push(() => <SkytapTestConnection />);
settingsSlots.more.push(() => <ControlNodeSettings />);

/** The sidebar, in order. */
export const pages: PageEntry[] = [
  { id: 'povs', label: 'POVs', component: PovsPage },
  { id: 'local-vms', label: 'Local VMs', component: LocalVmsPage },
  { id: 'templates', label: 'Templates', component: TemplatesPage },
  { id: 'terminals', label: 'Terminals', component: TerminalsPage },
  { id: 'jobs', label: 'Jobs', component: JobsPage },
  { id: 'settings', label: 'Settings', component: SettingsPage },
];
