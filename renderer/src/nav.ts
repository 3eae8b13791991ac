/** Sidebar navigation by page id: any page can send the user to another (e.g. Local VMs → Terminals). */
export const NAVIGATE_EVENT = 'povdesk-navigate';

/** The POV a `#/povs/<id>` hash names (a povdesk://pov/<id> link opens the app there), or null. */
export function povFromHash(hash: string = window.location.hash): string | null {
  return /^#\/povs\/([A-Za-z0-9][A-Za-z0-9_-]{0,127})$/.exec(hash)?.[1] ?? null;
}

export function navigate(pageId: string): void {
  window.history.replaceState(null, '', `#/${pageId}`);
  window.dispatchEvent(new CustomEvent(NAVIGATE_EVENT, { detail: pageId }));
}
