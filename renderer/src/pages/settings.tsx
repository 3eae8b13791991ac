import SettingsPage, { settingsSlots } from './settings-page';
import CheckAccounts from './settings/check-accounts';
import ControlNodeSettings from './settings/control-node-settings';
import ReminderSettings from './settings/reminder-settings';
import SkytapTestConnection from './settings/skytap-test-connection';
import TerminalSettings from './settings/terminal-settings';

// The Settings page with the panels other domains add to it: one module, so pages/index.tsx loads
// page and panels together on the first visit, not at start-up.
settingsSlots.skytap.push((form) => <SkytapTestConnection form={form} />);
settingsSlots.more.push(() => <ControlNodeSettings />);
settingsSlots.more.push(() => <ReminderSettings />);
settingsSlots.more.push(() => <TerminalSettings />);
settingsSlots.more.push(() => <CheckAccounts />);

export default SettingsPage;
