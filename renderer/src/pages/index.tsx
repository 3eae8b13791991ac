import type { ComponentType } from 'react';
import JobsPage from './JobsPage';
import LocalVmsPage from './LocalVmsPage';
import PovsPage from './PovsPage';
import SettingsPage, { settingsSlots } from './SettingsPage';
import ControlNodeSettings from './settings/ControlNodeSettings';
import SkytapTestConnection from './settings/SkytapTestConnection';
import TemplatesPage from './TemplatesPage';

export interface PageEntry {
  id: string;
  label: string;
  component: ComponentType;
}

settingsSlots.skytap.push(() => <SkytapTestConnection />);
settingsSlots.more.push(() => <ControlNodeSettings />);

/** The sidebar, in order. A page not yet built shows its honest empty state. */
export const pages: PageEntry[] = [
  { id: 'povs', label: 'POVs', component: PovsPage },
  { id: 'local-vms', label: 'Local VMs', component: LocalVmsPage },
  { id: 'templates', label: 'Templates', component: TemplatesPage },
  { id: 'terminals', label: 'Terminals', component: placeholder('Terminals', 'SSH terminals appear here.') },
  { id: 'jobs', label: 'Jobs', component: JobsPage },
  { id: 'settings', label: 'Settings', component: SettingsPage },
];

function placeholder(title: string, text: string): ComponentType {
  const P = () => (
    <section className="page">
      <header className="page-head">
        <h2>{title}</h2>
      </header>
      <div className="empty">{text}</div>
    </section>
  );
  P.displayName = `${title}Placeholder`;
  return P;
}
