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

export { bothZones, seTimeZone, withZones } from '../../../../shared/time-zones';

/** Every IANA zone this renderer knows, for the customer time-zone pickers' suggestions. */
export function knownTimeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  return intl.supportedValuesOf?.('timeZone') ?? [];
}
