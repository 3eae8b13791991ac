/** Sidebar navigation by page id: any page can send the user to another (e.g. Local VMs → Terminals). */
export const NAVIGATE_EVENT = 'povdesk-navigate';

export function navigate(pageId: string): void {
  window.history.replaceState(null, '', `#/${pageId}`);
  window.dispatchEvent(new CustomEvent(NAVIGATE_EVENT, { detail: pageId }));
}
