import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compressPayload, fitUserData, stripComments } from '../../main/services/control-node/fit';
import { BEGIN_LINE, END_LINE } from '../../main/services/control-node/markers';
import { buildBootstrap, buildPolicy } from '../../main/services/control-node/payload';
import { needs } from '../support/system';
import { baseInput, makeBundle } from './fixtures';
import { makeSandbox, SHELLS, SOCKET_GID, type Sandbox } from './sandbox';

const missing = needs(['dash', 'bash', 'busybox', 'openssl', 'stat']);
const boxes: Sandbox[] = [];
afterEach(async () => {
  while (boxes.length) await boxes.pop()!.close();
});
async function box(opts?: { socket?: boolean }) {
  const b = await makeSandbox(opts);
  boxes.push(b);
  return b;
}

const TIERS = {
  1: (s: string) => s,
  2: (s: string) => stripComments(s),
  3: (s: string) => compressPayload(s),
} as const;

function indexOfCall(calls: string[][], pred: (c: string[]) => boolean): number {
  return calls.findIndex(pred);
}
const isAgentRun = (c: string[]) => c[0] === 'run' && c.includes('dashboard-agent');
const isVolumeRm = (c: string[]) => c[0] === 'volume' && c[1] === 'rm' && c.includes('dashboard-agent-state');

describe.skipIf(missing)('bootstrap payload, executed', () => {
  for (const [shellName, shell] of Object.entries(SHELLS)) {
    for (const tier of [1, 2, 3] as const) {
      it(`tier ${tier} under ${shellName}: policy and 0644 code written, state volume removed first, socket gid joined`, async () => {
        const b = await box();
        const { script, policy } = buildBootstrap(baseInput(b.root));
        const file = join(b.dir, 'payload.sh');
        writeFileSync(file, TIERS[tier](script));
        const r = b.run(shell, file);
        expect(r.stderr).toContain('attestation: ed25519');
        expect(r.status).toBe(0);
        const conf = join(b.root, 'etc/dashboard-agent');
        expect(readFileSync(join(conf, 'policy.yaml'), 'utf8')).toBe(policy);
        expect(readFileSync(join(conf, 'enrolment-code'), 'utf8')).toBe('ENR-abc123-XYZ\n');
        expect(statSync(join(conf, 'enrolment-code')).mode & 0o777).toBe(0o644);
        const calls = b.calls();
        const rm = indexOfCall(calls, isVolumeRm);
        const run = indexOfCall(calls, isAgentRun);
        expect(rm).toBeGreaterThanOrEqual(0);
        expect(run).toBeGreaterThan(rm);
        const argv = calls[run]!;
        expect(calls[run + 1]).toEqual(['CODEFILE', '644']);
        expect(argv[argv.indexOf('--group-add') + 1]).toBe(String(SOCKET_GID));
        expect(argv).toContain(`${b.root}/var/run/docker.sock:/var/run/docker.sock`);
        expect(argv).toContain('AGENT_ENROLMENT_CODE_FILE=/etc/dashboard-agent/enrolment-code');
        expect(argv.at(-1)).toBe('registry.example.com/povdesk/agent:1.4.2');
      });
    }

    it(`under ${shellName}: no socket means no mount and no --group-add at all, never an empty argument`, async () => {
      const b = await box({ socket: false });
      const file = join(b.dir, 'payload.sh');
      writeFileSync(file, buildBootstrap(baseInput(b.root)).script);
      const r = b.run(shell, file);
      expect(r.status).toBe(0);
      expect(r.stderr).toContain('no docker socket');
      const argv = b.calls().find(isAgentRun)!;
      expect(argv).not.toContain('--group-add');
      expect(argv).not.toContain('');
      expect(argv.join(' ')).not.toContain('docker.sock');
    });

    it(`tier 3 under ${shellName}: the decoder reproduces tier 1 byte for byte`, async () => {
      const b = await box();
      const { script } = buildBootstrap(baseInput(b.root));
      const packed = compressPayload(script);
      // Run the real decoder, with only its final "run it" line swapped for a copy.
      const capture = join(b.dir, 'decoded.sh');
      const runLine = 'sh "$t"; s=$?; rm -f "$t"; exit $s';
      expect(packed).toContain(runLine);
      const file = join(b.dir, 'decoder.sh');
      writeFileSync(file, packed.replace(runLine, `cat "$t" > '${capture}'; rm -f "$t"`));
      const r = b.run(shell, file);
      expect(r.status).toBe(0);
      expect(readFileSync(capture, 'utf8')).toBe(script);
    });
  }

  it('every tier starts and ends with the marker lines', () => {
    const { script } = buildBootstrap(baseInput('/x'));
    for (const t of [1, 2, 3] as const) {
      const lines = TIERS[t](script).trimEnd().split('\n');
      expect(lines[0]).toBe('#!/bin/sh');
      expect(lines[1]).toBe(BEGIN_LINE);
      expect(lines.at(-1)).toBe(END_LINE);
    }
  });

  it('tier 2 removes comment lines but keeps heredoc bodies byte for byte', () => {
    const bundle = makeBundle();
    const { script, policy } = buildBootstrap(baseInput('/x', { spire: spireOf(bundle, 'tok-1') }));
    const t2 = stripComments(script);
    expect(t2.length).toBeLessThan(script.length);
    expect(t2).toContain(policy); // the policy's own '#' header lines survive
    expect(t2).toContain(bundle);
    const outside = t2.split('\n').filter((l) => /^\s*#/.test(l) && !l.startsWith('#!'));
    // Only the markers and the heredocs' '#' lines (the policy header) remain.
    for (const l of outside) expect([BEGIN_LINE, END_LINE, ...policy.split('\n')]).toContain(l);
  });

  it('SPIRE: an SVID means AGENT_SPIFFE_JWT_FILE, no code mount, and the code file deleted', async () => {
    for (const shell of Object.values(SHELLS)) {
      const b = await box();
      const file = join(b.dir, 'payload.sh');
      writeFileSync(file, buildBootstrap(baseInput(b.root, { spire: spireOf(makeBundle(), 'join-1'), spireWaitSeconds: 5 })).script);
      const r = b.run(shell, file, { FAKE_SVID: '1' });
      expect(r.stderr).toContain('attestation: spire');
      expect(r.status).toBe(0);
      const calls = b.calls();
      const spire = calls.find((c) => c[0] === 'run' && c.includes('dashboard-spire-agent'))!;
      expect(spire.slice(spire.indexOf('-joinToken'))).toEqual(['-joinToken', 'join-1']);
      const agent = calls.find(isAgentRun)!;
      expect(agent).toContain('AGENT_SPIFFE_JWT_FILE=/run/spiffe/jwt.token');
      expect(agent.join(' ')).not.toContain('enrolment-code');
      expect(calls[calls.findIndex(isAgentRun) + 1]).toEqual(['CODEFILE', 'absent']);
      expect(readFileSync(join(b.root, 'etc/dashboard-agent/spire/agent.conf'), 'utf8')).toContain('trust_domain = "povdesk.test"');
      expect(readFileSync(join(b.root, 'etc/dashboard-agent/spire/agent.conf'), 'utf8')).toContain('server_port = "8091"');
    }
  });

  it('SPIRE: no SVID falls back to the code, warns, prints spire-agent log lines and removes the sidecars', async () => {
    const b = await box();
    const file = join(b.dir, 'payload.sh');
    writeFileSync(file, buildBootstrap(baseInput(b.root, { spire: spireOf(makeBundle(), 'join-1'), spireWaitSeconds: 2 })).script);
    const r = b.run(['dash'], file);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/warning: no SPIRE SVID after 2 seconds/);
    expect(r.stderr).toContain('fake-log-line');
    expect(r.stderr).toContain('attestation: ed25519');
    const calls = b.calls();
    const logs = calls.findIndex((c) => c[0] === 'logs' && c.includes('dashboard-spire-agent'));
    const rmSidecars = calls.findIndex(
      (c, i) => i > logs && c[0] === 'rm' && c.includes('dashboard-spiffe-helper') && c.includes('dashboard-spire-agent'),
    );
    const agent = calls.findIndex(isAgentRun);
    expect(logs).toBeGreaterThan(0);
    expect(rmSidecars).toBeGreaterThan(logs);
    expect(agent).toBeGreaterThan(rmSidecars);
    expect(calls[agent]).toContain('AGENT_ENROLMENT_CODE_FILE=/etc/dashboard-agent/enrolment-code');
    expect(calls[agent + 1]).toEqual(['CODEFILE', '644']);
  });

  it("a VM named x'; rm -rf / # changes nothing but its own quoted strings", () => {
    const plain = buildBootstrap(baseInput('/x', { controlNodeName: 'node', vms: [{ name: 'node', ip: '10.0.0.1' }] })).script;
    const evil = "x'; rm -rf / #";
    const hostile = buildBootstrap(baseInput('/x', { controlNodeName: evil, vms: [{ name: evil, ip: '10.0.0.1' }] })).script;
    const a = plain.split('\n');
    const b = hostile.split('\n');
    expect(b.length).toBe(a.length);
    const changed = b.map((l, i) => [a[i], l] as const).filter(([x, y]) => x !== y);
    expect(changed).toEqual([
      ["NODE_NAME='node'", `NODE_NAME='x'\\''; rm -rf / #'`],
      [
        '  - {vm: "node", cidr: 10.0.0.1/32, ports: [22, 443, 3389, 5985, 5986]}',
        `  - {vm: "x'; rm -rf / #", cidr: 10.0.0.1/32, ports: [22, 443, 3389, 5985, 5986]}`,
      ],
    ]);
  });

  it('hostile values that cannot be quoted safely are refused with the field named', () => {
    expect(() => buildBootstrap(baseInput('/x', { enrolmentCode: "abc'; id #" }))).toThrow(/enrolment code/);
    expect(() => buildBootstrap(baseInput('/x', { vms: [{ name: 'a', ip: '10.0.0.1; id' }] }))).toThrow(/IP address of VM "a"/);
    expect(() => buildBootstrap(baseInput('/x', { vms: [{ name: 'a\nb', ip: '10.0.0.1' }] }))).toThrow(/control character/);
    expect(() => buildBootstrap(baseInput('/x', { controlPlaneUrl: 'https://x.example/$(id)' }))).toThrow(/control-plane URL/);
    expect(() => buildBootstrap(baseInput('/x', { agentImage: 'Agent:latest' }))).toThrow(/agent image/);
    expect(() =>
      buildBootstrap(baseInput('/x', { spire: { ...spireOf('not a pem', 't'), trustBundle: 'x\nDASHBOARD_BUNDLE_EOF\nid' } })),
    ).toThrow(/trust bundle/);
  });

  it('policy: one /32 per VM on 22,443,3389,5985,5986, never a subnet; 169.254.0.0/16 denied; metadata IPs refused', () => {
    const p = buildPolicy('pov-1', [
      { name: 'a', ip: '10.1.2.3' },
      { name: 'b', ip: '10.1.2.4' },
    ]);
    expect(p).toContain('  - {vm: "a", cidr: 10.1.2.3/32, ports: [22, 443, 3389, 5985, 5986]}');
    expect(p).toContain('  - {vm: "b", cidr: 10.1.2.4/32, ports: [22, 443, 3389, 5985, 5986]}');
    expect(p).toMatch(/deny:\n {2}- \{cidr: 169\.254\.0\.0\/16/);
    const cidrs = [...p.matchAll(/cidr: ([0-9./]+)/g)].map((m) => m[1]);
    expect(cidrs).toEqual(['169.254.0.0/16', '10.1.2.3/32', '10.1.2.4/32']);
    expect(() => buildPolicy('pov-1', [{ name: 'md', ip: '169.254.169.254' }])).toThrow(/169\.254/);
    expect(buildPolicy('p', [{ name: 'é"\\', ip: '10.0.0.1' }])).toContain('{vm: "\\u00e9\\"\\\\"');
  });
});

describe.skipIf(missing)('fitting to 16,384 characters', () => {
  const vms = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      name: `vm-${i}`,
      ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${(i & 255) + 1 > 255 ? 1 : (i & 255) + 1}`,
    }));
  const uniqueVms = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ name: `customer-host-${i}`, ip: `10.${(i >> 8) & 255}.${i & 255}.${1 + (i % 250)}` }));

  it('tier 1 as written when it fits', () => {
    const { script } = buildBootstrap(baseInput('', { vms: vms(3) }));
    const f = fitUserData(script);
    expect(f.tier).toBe(1);
    expect(f.contents).toBe(script);
    expect(f.chars).toBe(script.length);
  });

  it('tier 2 when only comments stand in the way, tier 3 when the policy is bigger, refusal naming both sizes beyond', () => {
    const bundle = makeBundle();
    const sizeOf = (n: number) => buildBootstrap(baseInput('', { vms: uniqueVms(n), spire: spireOf(bundle, 't') })).script;
    // Find VM counts for each tier by growing the POV.
    let n = 1;
    while (fitUserData(sizeOf(n)).tier === 1) n += 5;
    const t2 = fitUserData(sizeOf(n));
    expect(t2.tier).toBe(2);
    expect(t2.chars).toBeLessThanOrEqual(16_384);
    expect(t2.originalChars).toBeGreaterThan(16_384);
    while (fitUserData(sizeOf(n)).tier === 2) n += 5;
    const t3 = fitUserData(sizeOf(n));
    expect(t3.tier).toBe(3);
    expect(t3.contents).toBe(compressPayload(sizeOf(n)));
    expect(() => fitUserData(sizeOf(60_000))).toThrow(/characters as written and \d+ compressed; Skytap's user_data holds at most 16384/);
  });

  it('refuses a script without markers', () => {
    expect(() => fitUserData('#!/bin/sh\necho hi\n')).toThrow(/marker/);
  });
});

function spireOf(bundle: string, token: string) {
  return {
    trustDomain: 'povdesk.test',
    serverAddress: 'spire.povdesk.test:8091',
    trustBundle: bundle,
    joinToken: token,
    spireAgentImage: 'ghcr.io/spiffe/spire-agent:1.9.6',
    spiffeHelperImage: 'ghcr.io/spiffe/spiffe-helper:0.8.0',
  };
}
void existsSync;
void beforeAll;
