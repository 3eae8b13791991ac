import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import { compressPayload, stripComments } from '../../main/services/control-node/fit';
import { buildBootstrap } from '../../main/services/control-node/payload';
import { asciiLabel } from '../../main/services/control-node/shell';
import { needs } from '../support/system';
import { baseInput } from './fixtures';
import { makeSandbox, type Sandbox } from './sandbox';
import { rng } from '../support/random';

const missing = needs(['dash', 'bash', 'busybox']);

describe.skipIf(missing)('fuzz: 1,000 hostile VM names, IPs and codes', () => {
  let box: Sandbox;
  let canary: string;
  const rand = rng(20261201);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;

  beforeAll(async () => {
    box = await makeSandbox();
    canary = join(box.dir, 'canary');
    mkdirSync(canary);
  });
  afterAll(() => box.close());

  // Each piece, if it ever reached a shell unquoted, would create a file in the canary directory.
  const hostile = () => {
    const c = `${canary}/p${Math.floor(rand() * 1e6)}`;
    return [
      `$(touch ${c})`,
      `\`touch ${c}\``,
      `'; touch ${c}; '`,
      `"; touch ${c}; "`,
      `'$(touch ${c})'`,
      `\\'; touch ${c} #`,
      `x' && touch ${c} && echo '`,
      `| touch ${c}`,
      `; touch ${c}`,
      `> ${c}`,
      `\${IFS}touch\${IFS}${c}`,
      `$((1+1))`,
      `DASHBOARD_POLICY_EOF`,
      `"`,
      `'`,
      '\\',
      '#',
      '*',
      '?',
      '~',
      '!',
      '%s',
      '{',
      '}',
      '[',
      ']',
      '&',
      ' ',
      'é',
      '漢',
      '🙂',
      ':',
      '- ',
      '"\\u0000"',
    ];
  };
  const name = () => {
    let s = '';
    const n = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < n; i++) s += pick(hostile()) + (rand() < 0.3 ? 'vm' : '');
    return s.slice(0, 255) || 'x';
  };

  it('1,000 names across 100 bootstraps: sh -n passes in dash, bash and busybox; running them under dash injects nothing', () => {
    let names = 0;
    for (let k = 0; k < 100; k++) {
      const vms = Array.from({ length: 10 }, (_, i) => ({ name: name(), ip: `10.0.${k}.${i + 1}` }));
      names += vms.length;
      const { script, policy } = buildBootstrap(baseInput(box.root, { vms, controlNodeName: vms[k % 10]!.name, povId: `pov-${k}` }));
      const file = join(box.dir, `fuzz-${k}.sh`);
      writeFileSync(file, script);
      for (const sh of [
        ['dash', '-n'],
        ['bash', '-n'],
        ['busybox', 'sh', '-n'],
      ]) {
        const r = spawnSync(sh[0]!, [...sh.slice(1), file], { encoding: 'utf8' });
        expect(r.status, `${sh.join(' ')} on script ${k}: ${r.stderr}`).toBe(0);
      }
      if (k % 10 === 0) {
        for (const t of [stripComments(script), compressPayload(script)]) {
          writeFileSync(file, t);
          expect(spawnSync('dash', ['-n', file]).status).toBe(0);
        }
        writeFileSync(file, script);
      }
      const run = box.run(['dash'], file);
      expect(run.status, run.stderr).toBe(0);
      expect(readFileSync(join(box.root, 'etc/dashboard-agent/policy.yaml'), 'utf8')).toBe(policy);
      expect(run.stderr).toContain(`installing the agent on ${asciiLabel(vms[k % 10]!.name)} (POV pov-${k}`);
    }
    expect(names).toBe(1000);
    expect(readdirSync(canary)).toEqual([]);
    expect(existsSync(join(box.dir, 'p0'))).toBe(false);
  });

  it('1,000 hostile IPs and 1,000 hostile codes are either valid or refused as invalid_request naming the field', () => {
    const good = /^(\d{1,3}\.){3}\d{1,3}$/;
    let refusedIp = 0;
    let refusedCode = 0;
    for (let i = 0; i < 1000; i++) {
      const ip = rand() < 0.2 ? `10.1.${i % 256}.${1 + (i % 250)}` : `10.1.${i % 256}.1${pick(hostile())}`;
      const code = rand() < 0.2 ? `code-${i}` : `code${pick(hostile())}${i}`;
      for (const [what, over] of [
        ['ip', { vms: [{ name: 'n', ip }] }],
        ['code', { enrolmentCode: code }],
      ] as const) {
        try {
          const { script } = buildBootstrap(baseInput(box.root, over));
          if (what === 'ip') expect(ip).toMatch(good);
          else expect(code).toMatch(/^[A-Za-z0-9._-]+$/);
          expect(script).toContain(what === 'ip' ? `cidr: ${ip}/32` : `'${code}'`);
        } catch (err) {
          expect(err).toBeInstanceOf(AppError);
          expect((err as AppError).code).toBe('invalid_request');
          expect((err as AppError).message).toMatch(what === 'ip' ? /IP address of VM "n"/ : /enrolment code/);
          if (what === 'ip') refusedIp++;
          else refusedCode++;
        }
      }
    }
    expect(refusedIp).toBeGreaterThan(700);
    expect(refusedCode).toBeGreaterThan(700);
  });
});
