import { Suspense, useEffect, useState } from 'react';
import { JobsDrawer } from './components/jobs-drawer';
import { Notifications } from './components/share/notifications';
import { NAVIGATE_EVENT, navigate } from './nav';
import { pages } from './pages';
import { useSettings } from './state/settings';

/** The keyring banner, once dismissed, stays away for this window's session (Settings still says it). */
const KEYRING_DISMISSED = 'povdesk.keyringBannerDismissed';

function initialPage(): string {
  const m = /^#\/?([a-z-]+)/.exec(window.location.hash);
  return m && pages.some((p) => p.id === m[1]) ? m[1]! : pages[0]!.id;
}

export function App() {
  const [current, setCurrent] = useState(initialPage);
  const [keyringDismissed, setKeyringDismissed] = useState(() => sessionStorage.getItem(KEYRING_DISMISSED) === '1');
  const view = useSettings((s) => s.view);
  const load = useSettings((s) => s.load);
  useEffect(() => void load(), [load]);
  useEffect(() => {
    const go = (e: Event) => {
      const id = (e as CustomEvent<string>).detail;
      if (pages.some((p) => p.id === id)) setCurrent(id);
    };
    window.addEventListener(NAVIGATE_EVENT, go);
    return () => window.removeEventListener(NAVIGATE_EVENT, go);
  }, []);
  const page = pages.find((p) => p.id === current) ?? pages[0]!;
  const Page = page.component;
  return (
    <div className="app">
      <nav className="sidebar" aria-label="Sections">
        <h1>POV Desk</h1>
        <Notifications />
        <ul>
          {pages.map((p) => (
            <li key={p.id}>
              <button
                className={p.id === current ? 'active' : ''}
                aria-current={p.id === current ? 'page' : undefined}
                onClick={() => navigate(p.id)}
              >
                {p.label}
              </button>
            </li>
          ))}
        </ul>
      </nav>
      <main className="content">
        {view && !view.keyring.available && !keyringDismissed && (
          <div className="banner warn banner-line" role="alert" data-testid="keyring-warning">
            <span className="ellipsis" title={`No OS keyring: secrets are kept in memory for this run only. ${view.keyring.remedy ?? ''}`}>
              No OS keyring: secrets are kept in memory for this run only. {view.keyring.remedy}
            </span>
            <button
              className="link"
              onClick={() => {
                sessionStorage.setItem(KEYRING_DISMISSED, '1');
                setKeyringDismissed(true);
              }}
            >
              Dismiss
            </button>
          </div>
        )}
        <Suspense
          fallback={
            <p className="muted" role="status">
              Loading…
            </p>
          }
        >
          <Page />
        </Suspense>
      </main>
      <JobsDrawer />
    </div>
  );
}
