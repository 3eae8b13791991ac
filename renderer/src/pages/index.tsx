import { lazy, type ComponentType } from 'react';
import PovsPage from './povs-page';

export interface PageEntry {
  id: string;
  label: string;
  component: ComponentType;
}

// The first paint is the POVs page; every other page loads on its first visit (xterm with the
// Local VMs, Templates and Terminals pages), keeping the start-up bundle to what the POVs page
// needs. test/bench/foundation.ts names any module that makes it grow.
const LocalVmsPage = lazy(() => import('./local-vms-page'));
const TemplatesPage = lazy(() => import('./templates-page'));
const TerminalsPage = lazy(() => import('./terminals-page'));
const JobsPage = lazy(() => import('./jobs-page'));
const SettingsPage = lazy(() => import('./settings'));

/** The sidebar, in order. */
export const pages: PageEntry[] = [
  { id: 'povs', label: 'POVs', component: PovsPage },
  { id: 'local-vms', label: 'Local VMs', component: LocalVmsPage },
  { id: 'templates', label: 'Templates', component: TemplatesPage },
  { id: 'terminals', label: 'Terminals', component: TerminalsPage },
  { id: 'jobs', label: 'Jobs', component: JobsPage },
  { id: 'settings', label: 'Settings', component: SettingsPage },
];
