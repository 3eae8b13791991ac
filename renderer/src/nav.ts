/** Sidebar navigation by page id: any page can send the user to another (e.g. Local VMs → Terminals). */
export const NAVIGATE_EVENT = 'povdesk-navigate';

/** The POV a `#/povs/<id>` hash names (a povdesk://pov/<id> link opens the app there), or null. */
export function povFromHash(hash: string = window.location.hash): string | null {
  return /^#\/povs\/([A-Za-z0-9][A-Za-z0-9_-]{0,127})$/.exec(hash)?.[1] ?? null;
}

/**
 * Opens a page (and, with `section`, the part of it an element with that id holds: the page
 * scrolls it into view once drawn, see `revealSection`). Sent for the page already open as well,
 * so the POVs page closes an open POV when the sidebar's "POVs" is pressed.
 */
export function navigate(pageId: string, section?: string): void {
  window.history.replaceState(null, '', `#/${pageId}${section ? `/${section}` : ''}`);
  window.dispatchEvent(new CustomEvent(NAVIGATE_EVENT, { detail: pageId }));
}

/** The section a `#/<page>/<section>` hash names for `pageId` (navigate's second argument), or null. */
export function sectionFromHash(pageId: string, hash: string = window.location.hash): string | null {
  const m = /^#\/([a-z-]+)\/([a-z-]+)$/.exec(hash);
  return m && m[1] === pageId ? m[2]! : null;
}

/** Scrolls the element with this id into view and moves focus to it (a Fix link's destination). */
export function reveal(id: string): void {
  const el = document.getElementById(id);
  if (!el) return;
  el.scrollIntoView?.({ block: 'start' });
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus({ preventScroll: true });
}
