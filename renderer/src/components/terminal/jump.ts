/** "user@host:port, host2" → hops; the user defaults to the target's. Throws a readable error. */
export function parseJump(text: string, defaultUser: string): { host: string; port: number; username: string }[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((hop) => {
      const m = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:\s]+)(?::(\d+))?$/.exec(hop);
      if (!m) throw new Error(`jump host "${hop}" is not [user@]host[:port]`);
      const port = m[3] ? Number(m[3]) : 22;
      if (port < 1 || port > 65535) throw new Error(`jump host "${hop}" has port ${port}; ports are 1–65535`);
      return { host: m[2]!.replace(/^\[|\]$/g, ''), port, username: m[1] ?? defaultUser };
    });
}

/** Hops as the form's text, the inverse of parseJump: user@host:port, comma-separated. */
export const jumpText = (jump: { host: string; port: number; username: string }[]) =>
  jump.map((j) => `${j.username}@${j.host.includes(':') ? `[${j.host}]` : j.host}:${j.port}`).join(', ');
