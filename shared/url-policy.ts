import { AppError } from './contract/errors';

/**
 * Where credentials may travel in clear. A Skytap URL (Basic auth), a control-plane URL and a
 * remote vm-manager URL (bearer tokens) must be https://, or http:// to this machine's loopback
 * (127.0.0.0/8, ::1, localhost), where no network sees the token.
 */

/** Whether a URL's hostname (as WHATWG URL parses it) names this machine's loopback. */
export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === 'localhost' || h === '[::1]') return true;
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  return !!m && m.slice(1).every((o) => Number(o) <= 255) && m[1] === '127';
}

/**
 * Why a URL must not carry credentials, or null when it may: it must parse, be https:, or be
 * http: to loopback. `what` names the setting in the message ("the Skytap URL").
 */
export function credentialUrlProblem(what: string, url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${what} ${JSON.stringify(url.slice(0, 200))} is not a URL`;
  }
  if (u.protocol === 'https:') return null;
  if (u.protocol !== 'http:') return `${what} must be https:// (not ${u.protocol})`;
  if (isLoopbackHostname(u.hostname)) return null;
  return (
    `${what} must be https:// — plain http:// would send the credentials in clear, so it is allowed only for this machine's ` +
    `loopback (127.0.0.1, ::1, localhost)`
  );
}

/** A zod superRefine step: adds credentialUrlProblem's message as the issue. */
export const refineCredentialUrl =
  (what: string) =>
  (url: string, ctx: { addIssue(issue: { code: 'custom'; message: string }): void }): void => {
    const problem = credentialUrlProblem(what, url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  };

/** Throws invalid_request (the problem, then where to fix it) unless the URL may carry credentials. */
export function checkCredentialUrl(what: string, url: string, fixIt: string): void {
  const problem = credentialUrlProblem(what, url);
  if (problem) throw new AppError('invalid_request', `${problem[0]!.toUpperCase()}${problem.slice(1)}; ${fixIt}.`);
}
