/**
 * The two marker lines that bracket every bootstrap payload. The payload builder writes them and
 * the template runner refuses to run anything that lacks either: a truncated metadata read must
 * never execute the top half of a script (the half that removes the running agent).
 * One module, imported by both payload.ts and runner.ts, so the two can never drift apart.
 */
export const BEGIN_MARKER = 'BEGIN-DASHBOARD-AGENT-BOOTSTRAP';
export const END_MARKER = 'END-DASHBOARD-AGENT-BOOTSTRAP';

/** The marker lines as they appear in a payload (shell comments, so any shell ignores them). */
export const BEGIN_LINE = `# ${BEGIN_MARKER}`;
export const END_LINE = `# ${END_MARKER}`;

/** Skytap refuses a longer user_data with 422 "Contents is too long" (EC2 has the same limit). */
export const USER_DATA_LIMIT = 16_384;
