/**
 * The customer handout for a share link: plain text an SE pastes into an e-mail. It carries the
 * URL, the one password, the expiry in the CUSTOMER's time zone, and two lines on what they will
 * see. Nothing else secret (no environment ids, no account names).
 */
export interface HandoutInput {
  povName: string;
  url: string;
  password: string;
  expiresAt: string;
  /** IANA zone of the customer, e.g. "America/Chicago". */
  timeZone: string;
  runtimeLimitMinutes?: number | null;
}

/** The expiry as the customer reads it: date, time and the zone's short name. */
export function expiryFor(expiresAt: string, timeZone: string): string {
  const d = new Date(expiresAt);
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    timeZoneName: 'short',
  });
  return fmt.format(d);
}

/** True when the zone is one Intl knows (a bad one would throw inside the handout). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return tz.trim() !== '';
  } catch {
    return false;
  }
}

export function handoutText(h: HandoutInput): string {
  const hours = h.runtimeLimitMinutes ? Math.round((h.runtimeLimitMinutes / 60) * 10) / 10 : null;
  return [
    `Your ${h.povName} evaluation environment`,
    '',
    `Link:      ${h.url}`,
    `Password:  ${h.password}`,
    `Available until: ${expiryFor(h.expiresAt, h.timeZone)}`,
    ...(hours ? [`Running time: up to ${hours} hours in total (the clock stops while the machines are suspended).`] : []),
    '',
    'Open the link in a browser and enter the password. You will see one tile per machine: ' +
      'click a tile to open its desktop in the browser;',
    'a machine that is off or suspended shows a power button — press it and give it a minute or two to come up.',
  ].join('\n');
}

/** "in 3 days", "in 5 hours", "in 12 minutes", "2 hours ago". */
export function relativeTime(iso: string, now: number): string {
  const ms = new Date(iso).getTime() - now;
  const a = Math.abs(ms);
  const unit = a >= 2 * 86_400_000 ? [86_400_000, 'day'] : a >= 2 * 3600_000 ? [3600_000, 'hour'] : [60_000, 'minute'];
  const n = Math.max(1, Math.round(a / (unit[0] as number)));
  const text = `${n} ${unit[1] as string}${n === 1 ? '' : 's'}`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}
