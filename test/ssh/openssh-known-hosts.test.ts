/**
 * Reading OpenSSH's known_hosts (main/services/ssh/openssh-known-hosts.ts), checked against
 * OpenSSH's own reader: for every name, the lines ours finds are the lines `ssh-keygen -F` finds,
 * in a plain file and after `ssh-keygen -H` hashed it (Debian's and Ubuntu's default).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysInText, lookupName, opensshKeysFor, opensshVerdict } from '../../main/services/ssh/openssh-known-hosts';
import { needs } from '../support/system';

const skip = needs(['ssh-keygen']);

/** host, port: the names a terminal looks up. */
const QUERIES: [string, number][] = [
  ['alpha.example', 22],
  ['ALPHA.example', 22],
  ['10.0.0.1', 22],
  ['alpha.example', 2222],
  ['alpha.example', 2200],
  ['x.corp.example', 22],
  ['bad.corp.example', 22],
  ['rev.example', 22],
  ['host.example', 22],
  ['hoost.example', 22],
  ['y.ca.example', 22],
  ['beta.example', 22],
  ['127.0.0.1', 2022],
];

describe.skipIf(skip)('OpenSSH known_hosts: the lines ssh-keygen -F finds, plain and hashed', () => {
  let dir: string;
  let a: string;
  let b: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-kh-'));
    for (const k of ['a', 'b']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', k, '-f', join(dir, k)]);
    [a, b] = ['a', 'b'].map((k) =>
      readFileSync(join(dir, `${k}.pub`), 'utf8')
        .trim()
        .split(' ')
        .slice(0, 2)
        .join(' '),
    ) as [string, string];
    writeFileSync(
      join(dir, 'known_hosts'),
      [
        '# a comment',
        `alpha.example,10.0.0.1 ${a}`,
        `[alpha.example]:2222 ${b}`,
        `*.corp.example,!bad.corp.example ${a}`,
        `@revoked rev.example ${b}`,
        `@cert-authority *.ca.example ${a}`,
        'not a key line at all',
        `h?st.example ${b}`,
        `beta.example ssh-ed25519 not*base64`,
        `[127.0.0.1]:2022 ${a} a comment with spaces`,
        '',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Line numbers `ssh-keygen -F` prints for a name, leaving out CA lines (POV Desk skips them). */
  const oracle = (file: string, name: string) =>
    // exit status 1 when nothing is found; the lines are what counts
    [
      ...spawnSync('ssh-keygen', ['-F', name, '-f', file], { encoding: 'utf8' }).stdout.matchAll(
        /^# Host \S+ found: line (\d+)(?: (\w+))?/gm,
      ),
    ]
      .filter((m) => m[2] !== 'CA')
      .map((m) => Number(m[1]));
  const ours = (file: string, host: string, port: number) =>
    keysInText(readFileSync(file, 'utf8'), file, host, port, '').map((k) => k.line);

  it('finds the same lines as OpenSSH in a plain file', () => {
    const file = join(dir, 'known_hosts');
    for (const [host, port] of QUERIES.filter(([h]) => h !== 'beta.example')) {
      expect(ours(file, host, port), `${host}:${port}`).toEqual(oracle(file, lookupName(host, port)));
    }
    // The oracle itself is not empty-handed: the file does name hosts.
    expect(oracle(file, 'alpha.example')).toEqual([2]);
    // ssh-keygen -F lists a line whose key is not base64 by its name; no key can match it, so ours skips it.
    expect(oracle(file, 'beta.example')).toEqual([9]);
    expect(ours(file, 'beta.example', 22)).toEqual([]);
  });

  it('finds the same lines after ssh-keygen -H hashed the names', () => {
    const file = join(dir, 'hashed');
    // ssh-keygen -H refuses a file with lines it cannot read: hash the valid ones.
    const valid = readFileSync(join(dir, 'known_hosts'), 'utf8')
      .split('\n')
      .filter((l) => !l.startsWith('not a key') && !l.includes('not*base64'));
    writeFileSync(file, valid.join('\n'));
    execFileSync('ssh-keygen', ['-q', '-H', '-f', file], { stdio: 'ignore' });
    expect(readFileSync(file, 'utf8')).toMatch(/^\|1\|/m);
    expect(readFileSync(file, 'utf8')).not.toContain('alpha.example');
    for (const [host, port] of QUERIES) expect(ours(file, host, port), `${host}:${port}`).toEqual(oracle(file, lookupName(host, port)));
    expect(ours(file, 'alpha.example', 2222)).toHaveLength(1);
  });

  it('a match trusts, a revoked key refuses, another key of the type is a change; files that are missing count as empty', () => {
    const file = join(dir, 'known_hosts');
    const blob = (k: string) => k.split(' ')[1]!;
    const keys = (host: string, port = 22) => opensshKeysFor([join(dir, 'missing'), file], host, port);
    expect(opensshVerdict(keys('alpha.example'), 'ssh-ed25519', blob(a))).toMatchObject({ kind: 'match', entry: { line: 2 } });
    expect(opensshVerdict(keys('alpha.example'), 'ssh-ed25519', blob(b))).toMatchObject({
      kind: 'changed',
      entry: { line: 2, keyBase64: blob(a) },
    });
    expect(opensshVerdict(keys('alpha.example'), 'ssh-rsa', 'AAAA')).toEqual({ kind: 'none' });
    expect(opensshVerdict(keys('rev.example'), 'ssh-ed25519', blob(b))).toMatchObject({
      kind: 'revoked',
      entry: { line: 5, revoked: true },
    });
    expect(opensshVerdict(keys('y.ca.example'), 'ssh-ed25519', blob(a))).toEqual({ kind: 'none' });
    expect(opensshVerdict(keys('127.0.0.1', 2022), 'ssh-ed25519', blob(a))).toMatchObject({ kind: 'match', entry: { file } });
    expect(opensshKeysFor([join(dir, 'missing'), dir], 'alpha.example', 22)).toEqual([]);
  });
});
