/**
 * What a POV row's Start / Suspend / Destroy buttons ask for: the contract method the page calls.
 * Its own module so the list (pov-list.tsx) and the row's buttons (row-extras.tsx) both import it
 * without importing each other.
 */
export type PovAction = 'pov.start' | 'pov.suspend' | 'pov.destroy';
