/**
 * "confirmed 4 min ago": when Skytap last confirmed a row. Worded so it never implies the value
 * is live; a row never confirmed says so.
 */
export function confirmedText(at: string | null, now: number): string {
  if (!at) return 'never confirmed';
  const t = Date.parse(at);
  if (Number.isNaN(t)) return 'never confirmed';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 45) return 'confirmed just now';
  const m = Math.round(s / 60);
  if (m < 60) return `confirmed ${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `confirmed ${h} h ago`;
  return `confirmed ${Math.round(h / 24)} d ago`;
}

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
    return mine; // a zone this renderer's Intl does not know: the SE's time is still right
  }
}

/** Every IANA zone this renderer knows, for the customer time-zone pickers' suggestions. */
export function knownTimeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  return intl.supportedValuesOf?.('timeZone') ?? [];
}

const ISO_INSTANT = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

/** Text from the core with ISO instants in it (readiness details): each instant in both zones. */
export function withZones(text: string, customerTz: string | null | undefined): string {
  return text.replace(ISO_INSTANT, (iso) => bothZones(iso, customerTz));
}
