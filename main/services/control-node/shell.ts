import { AppError } from '../../../shared/contract/errors';

/**
 * Single-quotes a value for /bin/sh. Inside single quotes nothing is special except the quote
 * itself, which is closed, escaped and reopened: `x'y` becomes `'x'\''y'`. Callers validate first
 * (no NUL, no newline), so a quoted value is always one token on one line.
 */
export function shQuote(value: string): string {
  if (value.includes('\0')) throw new AppError('invalid_request', 'a value for the bootstrap contains a NUL byte');
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

// C0 controls, DEL, C1 controls, and the Unicode line/paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function bad(what: string, value: string, rule: string): AppError {
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  return new AppError('invalid_request', `${what} ${shown} is not usable in the bootstrap: ${rule}`);
}

/** A VM or POV name: any printable text up to 255 characters (it is quoted, never interpreted). */
export function checkName(what: string, value: string): string {
  if (value.length === 0 || value.length > 255) throw bad(what, value, 'it must be 1 to 255 characters');
  if (CONTROL.test(value)) throw bad(what, value, 'it contains a control character or line break; rename it in Skytap');
  return value;
}

/** A plain dotted-quad IPv4 address, no leading zeros; link-local (169.254/16) is refused. */
export function checkIpv4(what: string, value: string): string {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(value);
  if (!m) throw bad(what, value, 'it must be a dotted IPv4 address such as 10.0.0.5');
  const parts = m.slice(1).map((p) => {
    if (p.length > 1 && p.startsWith('0')) throw bad(what, value, 'octets must not have leading zeros');
    const n = Number(p);
    if (n > 255) throw bad(what, value, 'each octet must be 0 to 255');
    return n;
  });
  if (parts[0] === 169 && parts[1] === 254) throw bad(what, value, '169.254.0.0/16 is the metadata range and is always denied');
  if (parts[0] === 0 || parts[0]! >= 224) throw bad(what, value, 'it is not a unicast host address');
  return value;
}

/** An opaque token (enrolment code, join token, agent id, POV id): letters, digits and . _ - only. */
export function checkToken(what: string, value: string, max = 512): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(value) || value.length > max) {
    throw bad(what, value, `it must be 1 to ${max} letters, digits, dots, underscores or dashes`);
  }
  return value;
}

/** An http(s) URL with no whitespace, quotes, backslashes or shell/yaml-special characters. */
export function checkUrl(what: string, value: string): string {
  if (value.length > 500 || !/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?(\/[A-Za-z0-9._~/%+=-]*)?$/.test(value)) {
    throw bad(what, value, 'it must be an http(s) URL made of letters, digits and / . _ ~ % + = - (no query string)');
  }
  return value;
}

/** A container image reference such as registry.example.com:5000/team/agent:1.2@sha256:... */
export function checkImage(what: string, value: string): string {
  if (value.length > 300 || !/^[a-z0-9][a-z0-9._\-/:]*(@sha256:[a-f0-9]{64})?$/.test(value)) {
    throw bad(what, value, 'it must be an image reference (lowercase registry/name[:tag][@sha256:digest])');
  }
  return value;
}

/** A SPIFFE trust domain: lowercase letters, digits, dots, dashes, underscores. */
export function checkTrustDomain(value: string): string {
  if (value.length > 255 || !/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/.test(value)) {
    throw bad('SPIRE trust domain', value, 'it must be lowercase letters, digits, dots, dashes or underscores, e.g. example.org');
  }
  return value;
}

/** host:port (port defaults to 8081): a DNS name or IPv4 address, port 1 to 65535. */
export function parseHostPort(value: string, defaultPort = 8081): { host: string; port: number } {
  const m = /^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!m) throw bad('SPIRE server address', value, 'it must be host or host:port, e.g. spire.example.org:8081');
  const port = m[3] === undefined ? defaultPort : Number(m[3]);
  if (port < 1 || port > 65535) throw bad('SPIRE server address', value, 'the port must be 1 to 65535');
  return { host: m[1]!, port };
}

/** One or more PEM certificates and nothing else (the trust bundle goes into a heredoc verbatim). */
export function checkPemBundle(value: string): string {
  const text = value.replace(/\r\n/g, '\n').trim();
  const block = /-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+\n-----END CERTIFICATE-----/g;
  if (!text || text.replace(block, '').trim() !== '' || text.length > 64_000) {
    throw bad('SPIRE trust bundle', value.slice(0, 40), 'it must be PEM certificates only (BEGIN/END CERTIFICATE blocks)');
  }
  return `${text}\n`;
}

/**
 * Renders text as a YAML double-quoted scalar made only of printable ASCII: quote, backslash and
 * every non-ASCII character are escaped, so the policy is 7-bit clean and a name can never end
 * the scalar, the line or the heredoc that carries it.
 */
export function yamlQuote(value: string): string {
  let out = '"';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp >= 0x20 && cp < 0x7f) out += ch;
    else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** A printable-ASCII rendering of a name for log lines (non-ASCII becomes <U+XXXX>). */
export function asciiLabel(value: string): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    out += cp >= 0x20 && cp < 0x7f ? ch : `<U+${cp.toString(16).toUpperCase().padStart(4, '0')}>`;
  }
  return out;
}
