import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { methods } from '../../shared/contract';
import { methodHints } from '../../shared/contract/annotations';
import { helpText } from '../../main/cli/index';

/** Field names that carry a secret wherever they appear in an argument schema. */
const SECRET_FIELD = /token|password|secret|apikey|privatekey|installkey/i;

function secretFields(schema: unknown, path = ''): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'properties' && v && typeof v === 'object') {
      for (const [name, sub] of Object.entries(v as Record<string, unknown>)) {
        if (SECRET_FIELD.test(name)) out.push(`${path}${name}`);
        out.push(...secretFields(sub, `${path}${name}.`));
      }
    } else out.push(...secretFields(v, path));
  }
  return out;
}

describe('the contract annotations table', () => {
  it('covers every contract method and nothing else', () => {
    expect(Object.keys(methodHints).sort()).toEqual(Object.keys(methods).sort());
  });

  it('is consistent: read-only is neither destructive nor non-idempotent', () => {
    for (const [name, h] of Object.entries(methodHints)) {
      if (h.readOnly)
        expect({ name, destructive: h.destructive, idempotent: h.idempotent }).toEqual({ name, destructive: false, idempotent: true });
    }
  });

  it('keeps every method that takes a secret off MCP, and says why', () => {
    const takingSecrets = Object.entries(methods)
      .filter(([, def]) => secretFields(z.toJSONSchema(def.args, { io: 'input', unrepresentable: 'any' })).length > 0)
      .map(([name]) => name);
    expect(takingSecrets).toContain('settings.saveSkytap');
    for (const name of takingSecrets) {
      expect(methodHints[name as keyof typeof methodHints], name).toHaveProperty('notOverMcp', expect.stringMatching(/takes/));
      // and `povdesk call` warns when its JSON comes on the command line (issue 33 item 3)
      expect(methodHints[name as keyof typeof methodHints], name).toHaveProperty('takesSecret');
    }
  });

  it('shows in povdesk --help', () => {
    const text = helpText();
    expect(text).toMatch(/pov\.list[^\n]*\n[^\n]*\n\s+\[read-only\]/);
    expect(text).toMatch(/pov\.destroy[^\n]*\n[^\n]*\n\s+\[destructive\] \[idempotent\]/);
    expect(text).toMatch(/settings\.saveSkytap[^\n]*\n[^\n]*\n[^\n]*\[not over MCP: takes the Skytap API token/);
  });
});
