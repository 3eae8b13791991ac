import { navigate } from '../../nav';

/** Opening a POV from anywhere (a notification): the POVs page takes the request when it mounts or hears the event. */
export const OPEN_POV_EVENT = 'povdesk-open-pov';
let pending: { povId: string; focus: 'extend' } | null = null;

export function openPov(povId: string): void {
  pending = { povId, focus: 'extend' };
  navigate('povs');
  window.dispatchEvent(new CustomEvent(OPEN_POV_EVENT));
}

export function takePendingPov(): { povId: string; focus: 'extend' } | null {
  const p = pending;
  pending = null;
  return p;
}
