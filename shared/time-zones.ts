/**
 * Instants as an SE reads them: in the SE's own zone, with the customer's beside it when the two
 * differ. Pure (Intl only), so the renderer's lists and toasts, the browser's Web Notifications
 * and Electron's OS notifications (main/electron/notification-text.ts) share this one copy.
 */

/** The SE's own time zone: the machine's. */
export function seTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

function fmt(d: Date, timeZone: string, withDate: boolean): string {
  return d.toLocaleString(undefined, withDate ? { dateStyle: 'medium', timeStyle: 'short', timeZone } : { timeStyle: 'short', timeZone });
}

/**
 * An instant in the SE's zone with the customer's beside it when the two differ:
 * "Dec 1, 2026, 6:00 PM Europe/Berlin · 12:00 PM America/New_York customer". The customer's
 * date is repeated only when it is another day there. No customer zone: the SE's alone.
 */
export function bothZones(iso: string, customerTz: string | null | undefined, se: string = seTimeZone()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const mine = `${fmt(d, se, true)} ${se}`;
  if (!customerTz || customerTz === se) return mine;
  try {
    const day = (tz: string) => d.toLocaleDateString('en-CA', { timeZone: tz });
    return `${mine} · ${fmt(d, customerTz, day(customerTz) !== day(se))} ${customerTz} customer`;
  } catch {
    return mine; // a zone this runtime's Intl does not know: the SE's time is still right
  }
}

const ISO_INSTANT = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

/** Text from the core with ISO instants in it (readiness details, notification bodies): each instant in both zones. */
export function withZones(text: string, customerTz: string | null | undefined, se: string = seTimeZone()): string {
  return text.replace(ISO_INSTANT, (iso) => bothZones(iso, customerTz, se));
}
