// ~/.ssh/config read the way OpenSSH reads it: every host's address, user, port, identity files,
// keepalive and jump hosts are checked against `ssh -G` (OpenSSH's own resolution, no connection)
// on the same files.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJump, readOpensshConfig, type OpensshHop } from '../../main/services/ssh/openssh-config';
import { testCore } from '../support/core';

const dir = mkdtempSync(join(tmpdir(), 'ssh-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { homedir: home, username: me } = userInfo(); // ssh expands ~ and %d from the passwd entry, not $HOME

const hasSsh = (() => {
  try {
    execFileSync('ssh', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

mkdirSync(join(dir, 'conf.d'));
writeFileSync(
  join(dir, 'conf.d', '10-lab.conf'),
  `# included from inside "Host *.lab"
User labber
Host db.lab
  HostName 10.9.0.7
  Port 5522
`,
);
writeFileSync(
  join(dir, 'conf.d', '20-more.conf'),
  `# only for names that match *.lab: "extra" never does
Host extra
  HostName wrong.example.net
`,
);
writeFileSync(
  join(dir, 'extra.conf'),
  `Host extra
  HostName extra.example.net
  User "extra.user"
`,
);
writeFileSync(join(dir, 'conf.d', 'skipped.txt'), 'Host notincluded\n  HostName nope\n');
const config = join(dir, 'config');
writeFileSync(
  config,
  `# global lines apply to every host
ServerAliveInterval 25
Include ${dir}/extra.conf

Host web1 web2
  HostName=10.0.0.5
  IDENTITYFILE ~/.ssh/web_key
  Port 2200

Host deep.lab
  ProxyJump ops2@edge:8022,bastion

Host *.lab !bad.lab
  Include ${dir}/conf.d/*.conf
  ProxyJump bastion
  Port 2201

Host bastion
  HostName bastion.example.com
  User ops
  ProxyJump edge

Host edge
  HostName 203.0.113.9
  Port 443
  ProxyJump none

Host *.corp
  HostName %h.example.com
  ProxyCommand nc -X connect -x proxy:3128 %h %p

Host git.corp
  User git

Match host never-this-name
  User matched

Host ci-box
  User builder
  ServerAliveInterval 5

Host web2
  HostName second-wins-not.example.com

Host *
  User everyone
  IdentityFile %d/.ssh/id_ed25519
`,
);

const aliases = ['extra', 'web1', 'web2', 'deep.lab', 'db.lab', 'bastion', 'edge', 'git.corp', 'ci-box'];

/** `ssh -G` for a name: its settings as ssh would use them, keyword → values. */
function sshG(name: string): Map<string, string[]> {
  const out = execFileSync('ssh', ['-G', '-F', config, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const m = new Map<string, string[]>();
  for (const line of out.split('\n')) {
    const i = line.indexOf(' ');
    if (i < 0) continue;
    const k = line.slice(0, i).toLowerCase();
    m.set(k, [...(m.get(k) ?? []), line.slice(i + 1)]);
  }
  return m;
}
const one = (g: Map<string, string[]>, k: string) => g.get(k)?.[0];

/** The hops ssh would go through for a ProxyJump value, each resolved by `ssh -G` itself. */
function sshChain(value: string | undefined, seen: string[] = []): OpensshHop[] {
  if (!value || value === 'none') return [];
  return parseJump(value)!.flatMap((h) => {
    const g = sshG(h.host);
    return [
      ...sshChain(one(g, 'proxyjump'), [...seen, h.host]),
      { host: one(g, 'hostname')!, port: h.port ?? Number(one(g, 'port')), username: h.user ?? one(g, 'user')! },
    ];
  });
}

describe.skipIf(!hasSsh && process.env.CI !== 'true')('~/.ssh/config as OpenSSH reads it', () => {
  const read = readOpensshConfig(config, home, me);

  it('lists the concrete names on Host lines, those of included files too, and no pattern', () => {
    expect(read.hosts.map((h) => h.alias)).toEqual(aliases);
  });

  it.each(aliases)('%s: address, user, port, identity files, keepalive and ProxyCommand are what ssh -G says', (alias) => {
    const g = sshG(alias);
    const h = read.hosts.find((x) => x.alias === alias)!;
    expect({ host: h.host, port: h.port, username: h.username }).toEqual({
      host: one(g, 'hostname'),
      port: Number(one(g, 'port')),
      username: one(g, 'user'),
    });
    const expand = (f: string) => f.replace(/^~(?=\/)/, home).replace(/%d/g, home);
    expect(h.identityFiles).toEqual((g.get('identityfile') ?? []).map(expand));
    expect(h.keepaliveSec ?? 0).toBe(Number(one(g, 'serveraliveinterval')));
    expect(h.proxyCommand !== null).toBe(g.has('proxycommand'));
  });

  it.each(aliases)('%s: jump hosts in connection order, each resolved as ssh resolves it', (alias) => {
    const h = read.hosts.find((x) => x.alias === alias)!;
    expect(h.jump).toEqual(sshChain(one(sshG(alias), 'proxyjump')));
  });

  it('the hosts that exercise each rule came out as the rule says (so the comparison above compares something)', () => {
    const by = (a: string) => read.hosts.find((x) => x.alias === a)!;
    expect(by('web2').host).toBe('10.0.0.5'); // first value wins
    expect(by('db.lab')).toMatchObject({ host: '10.9.0.7', port: 5522, username: 'labber' }); // included inside *.lab
    expect(by('deep.lab').jump.map((j) => `${j.username}@${j.host}:${j.port}`)).toEqual([
      'ops2@203.0.113.9:8022',
      'everyone@203.0.113.9:443',
      'ops@bastion.example.com:22',
    ]);
    // quoted, and not the include *.lab cannot reach
    expect(by('extra')).toMatchObject({ host: 'extra.example.net', username: 'extra.user' });
    expect(by('git.corp')).toMatchObject({
      host: 'git.corp.example.com',
      username: 'git',
      proxyCommand: 'nc -X connect -x proxy:3128 %h %p',
    });
    expect(by('ci-box').keepaliveSec).toBe(25); // the global line came first
    expect(read.problems).toEqual([expect.stringMatching(/Match blocks are not read/)]);
  });
});

describe('~/.ssh/config: what OpenSSH would refuse or skip', () => {
  it('a relative Include is under ~/.ssh; a self-include stops 16 deep, named; a wildcard alias is not listed', () => {
    const h = mkdtempSync(join(dir, 'home-'));
    mkdirSync(join(h, '.ssh'));
    writeFileSync(join(h, '.ssh', 'hosts.conf'), 'Host rel\n  HostName 192.0.2.1\n');
    writeFileSync(join(h, '.ssh', 'config'), 'Include hosts.conf\nInclude config\nHost *.x\n  User y\n');
    const r = readOpensshConfig(join(h, '.ssh', 'config'), h, 'me');
    expect(r.hosts.map((x) => [x.alias, x.host, x.username])).toEqual([['rel', '192.0.2.1', 'me']]);
    expect(r.problems.some((p) => /nested more than 16 deep/.test(p))).toBe(true);
  });

  it('a missing file is no hosts and no problem; an unreadable or huge one is named', () => {
    expect(readOpensshConfig(join(dir, 'nope'), home, me)).toEqual({ file: join(dir, 'nope'), hosts: [], problems: [] });
    const big = join(dir, 'big');
    writeFileSync(big, `Host big\n${'# filler\n'.repeat(150_000)}`);
    const r = readOpensshConfig(big, home, me);
    expect(r.hosts).toEqual([]);
    expect(r.problems[0]).toMatch(/big: not read \(larger than 1 MB\)/);
  });

  it('a jump host with a bad port, shared by two hosts, is named once', () => {
    const f = join(dir, 'shared-hop');
    writeFileSync(f, 'Host s t\n  ProxyJump hop\nHost hop\n  Port 0\n');
    const r = readOpensshConfig(f, home, me);
    expect(r.hosts.filter((h) => h.jump[0]?.port === 22).map((h) => h.alias)).toEqual(['s', 't']);
    expect(r.problems).toEqual(['hop: Port "0" is not a port number; 22 is used']);
  });

  it('a bad port or ProxyJump is named and not used', () => {
    const f = join(dir, 'bad');
    writeFileSync(f, 'Host p\n  User a b\n  HostName\n  Port 99999\n  ProxyJump a@@b\nHost q\n  ProxyJump q2\nHost q2\n  ProxyJump q\n');
    const r = readOpensshConfig(f, home, me);
    expect(r.hosts[0]).toMatchObject({ alias: 'p', host: 'p', username: me, port: 22, jump: [] });
    expect(r.hosts.find((h) => h.alias === 'q')?.jump).toEqual([]);
    expect(r.problems).toEqual([
      expect.stringMatching(/bad:2: user takes one value, skipped/),
      expect.stringMatching(/bad:3: hostname without a value/),
      expect.stringMatching(/p: ProxyJump "a@@b" is not understood/),
      expect.stringMatching(/p: Port "99999" is not a port number/),
      expect.stringMatching(/q: ProxyJump "q2" is not understood \(or loops\)/),
      expect.stringMatching(/q2: ProxyJump "q" is not understood \(or loops\)/),
    ]);
  });
});

describe('ssh.opensshHosts through the real core', () => {
  it('reads the file POVDESK_SSH_CONFIG names at each call; set and empty, none', async () => {
    const f = join(dir, 'core-config');
    const t = await testCore({ env: { POVDESK_SSH_CONFIG: f } });
    const none = await testCore({ env: { POVDESK_SSH_CONFIG: '' } });
    try {
      expect(await t.call('ssh.opensshHosts', {})).toEqual({ file: f, hosts: [], problems: [] });
      writeFileSync(f, 'Host box\n  HostName 192.0.2.8\n  User se\n');
      expect(await t.call('ssh.opensshHosts', {})).toEqual({
        file: f,
        problems: [],
        hosts: [
          {
            alias: 'box',
            host: '192.0.2.8',
            port: 22,
            username: 'se',
            jump: [],
            identityFiles: [],
            keepaliveSec: null,
            proxyCommand: null,
          },
        ],
      });
      expect(await none.call('ssh.opensshHosts', {})).toEqual({ file: null, hosts: [], problems: [] });
    } finally {
      await t.close();
      await none.close();
    }
  });
});
