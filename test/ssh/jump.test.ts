import { describe, expect, it } from 'vitest';
import { parseJump } from '../../renderer/src/components/terminal/jump';

describe('jump host field (ProxyJump syntax)', () => {
  it('reads a comma-separated multi-hop list, defaulting user and port', () => {
    expect(parseJump('ops@bastion:2222, inner ,[fd00::1]:22', 'me')).toEqual([
      { host: 'bastion', port: 2222, username: 'ops' },
      { host: 'inner', port: 22, username: 'me' },
      { host: 'fd00::1', port: 22, username: 'me' },
    ]);
    expect(parseJump('  ', 'me')).toEqual([]);
  });
  it('refuses what is not [user@]host[:port]', () => {
    expect(() => parseJump('a b', 'me')).toThrow(/not \[user@\]host\[:port\]/);
    expect(() => parseJump('h:70000', 'me')).toThrow(/ports are 1–65535/);
  });
});
