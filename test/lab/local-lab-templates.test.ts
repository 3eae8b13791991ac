import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalLabTemplates, TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { TEST_IMAGE } from '../../main/vm-manager/images';

const vm = (over: Record<string, unknown> = {}) => ({
  name: 'ctl',
  image: 'debian-node',
  os: 'linux' as const,
  cpus: 2,
  memoryMib: 2048,
  diskGib: 20,
  ...over,
});

describe('local templates on a real directory', () => {
  let root: string;
  let dir: string;
  let warnings: { message: string; fields?: Record<string, unknown> }[];
  let store: LocalLabTemplates;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'povdesk-lt-'));
    dir = join(root, 'lab-templates');
    warnings = [];
    store = new LocalLabTemplates({ dir, log: { warn: (message, fields) => warnings.push({ message, fields }) } });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const files = () => {
    try {
      return readdirSync(dir).sort();
    } catch {
      return [];
    }
  };

  it('has only the bundled test template at first, on the test image at 2 CPUs / 2048 MiB / 20 GiB, attested', () => {
    const list = store.list();
    expect(list).toHaveLength(1);
    expect(list[0]).toEqual({
      id: TEST_TEMPLATE_ID,
      name: expect.any(String),
      description: expect.any(String),
      builtIn: true,
      vms: [{ name: 'test-vm', image: TEST_IMAGE, os: 'linux', cpus: 2, memoryMib: 2048, diskGib: 20, requireAttestation: true }],
    });
    expect(store.get(TEST_TEMPLATE_ID)?.builtIn).toBe(true);
    // a caller changing its copy does not change the next list
    list[0]!.vms[0]!.cpus = 99;
    expect(store.list()[0]!.vms[0]!.cpus).toBe(2);
  });

  it('creates a template as one JSON file named by a file-safe id, listed after the built-in one and read back by get', () => {
    const t = store.create({
      name: 'Two node POV',
      description: 'control node and a target',
      vms: [vm(), vm({ name: 'target', os: 'windows', requireAttestation: true })],
    });
    expect(t.id).toMatch(/^two-node-pov-[0-9a-f]{6}$/);
    expect(t.builtIn).toBe(false);
    expect(t.vms[0]!.requireAttestation).toBe(false);
    expect(files()).toEqual([`${t.id}.json`]);
    const onDisk = JSON.parse(readFileSync(join(dir, `${t.id}.json`), 'utf8'));
    expect(onDisk).toMatchObject({ version: 1, id: t.id, name: 'Two node POV', vms: [{ name: 'ctl' }, { name: 'target', os: 'windows' }] });
    expect(store.list().map((x) => x.id)).toEqual([TEST_TEMPLATE_ID, t.id]);
    expect(store.get(t.id)).toEqual(t);
    // a new store on the same directory sees it (nothing kept only in memory)
    expect(new LocalLabTemplates({ dir }).get(t.id)).toEqual(t);
  });

  it('a name of only symbols still gets a safe id', () => {
    const t = store.create({ name: '***', vms: [vm()] });
    expect(t.id).toMatch(/^template-[0-9a-f]{6}$/);
  });

  it.each([
    ['no VMs', { name: 'x', vms: [] }, /at least one VM/],
    ['nine VMs', { name: 'x', vms: Array.from({ length: 9 }, (_, i) => vm({ name: `vm${i}` })) }, /at most 8 VMs/],
    ['duplicate VM names', { name: 'x', vms: [vm(), vm()] }, /unique/],
    ['a VM name that is no DNS label', { name: 'x', vms: [vm({ name: 'Bad_Name' })] }, /vms\.0\.name/],
    ['a VM name too long for the POV tag', { name: 'x', vms: [vm({ name: 'a'.repeat(31) })] }, /30 characters/],
    ['zero CPUs', { name: 'x', vms: [vm({ cpus: 0 })] }, /vms\.0\.cpus/],
    ['128 MiB memory', { name: 'x', vms: [vm({ memoryMib: 128 })] }, /vms\.0\.memoryMib/],
    ['a fractional disk', { name: 'x', vms: [vm({ diskGib: 1.5 })] }, /vms\.0\.diskGib/],
    ['an unknown OS', { name: 'x', vms: [vm({ os: 'beos' })] }, /vms\.0\.os/],
    ['an image with a space', { name: 'x', vms: [vm({ image: 'a b' })] }, /vms\.0\.image/],
    ['an empty name', { name: '  ', vms: [vm()] }, /name/],
    ['a name with a newline', { name: 'a\nb', vms: [vm()] }, /control characters/],
    ['an unknown field', { name: 'x', vms: [vm()], id: '../../etc' }, /Unrecognized key/],
  ])('refuses %s with a clear error and writes nothing', (_what, input, message) => {
    expect(() => store.create(input as never)).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(message) }),
    );
    expect(files()).toEqual([]);
  });

  it('refuses a name already taken in any case, including the built-in one, and writes nothing more', () => {
    const first = store.create({ name: 'Demo', vms: [vm()] });
    expect(() => store.create({ name: 'demo', vms: [vm()] })).toThrow(
      expect.objectContaining({ code: 'conflict', message: expect.stringMatching(/"Demo" already exists/) }),
    );
    expect(() => store.create({ name: store.get(TEST_TEMPLATE_ID)!.name.toUpperCase(), vms: [vm()] })).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    expect(files()).toEqual([`${first.id}.json`]);
  });

  it(
    'updates a template in place: same id and file, created time kept; refuses the built-in one, unknown ids, a name another has ' +
      'and bad VMs, writing nothing',
    () => {
      const demo = store.create({ name: 'Demo', vms: [vm()] });
      const other = store.create({ name: 'Other', vms: [vm()] });
      const path = join(dir, `${demo.id}.json`);
      const createdAt = JSON.parse(readFileSync(path, 'utf8')).createdAt;
      const after = store.update(demo.id, {
        name: 'Demo two',
        description: 'now two VMs',
        vms: [vm({ cpus: 4 }), vm({ name: 'target', os: 'windows', requireAttestation: true })],
      });
      expect(after).toEqual({
        id: demo.id,
        name: 'Demo two',
        description: 'now two VMs',
        builtIn: false,
        vms: [
          { ...vm({ cpus: 4 }), requireAttestation: false },
          { ...vm({ name: 'target', os: 'windows' }), requireAttestation: true },
        ],
      });
      expect(store.get(demo.id)).toEqual(after);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ version: 1, id: demo.id, createdAt, name: 'Demo two' });
      expect(files()).toEqual([`${demo.id}.json`, `${other.id}.json`].sort());
      // Keeping its own name (another case) is fine; another template's name is not.
      expect(store.update(demo.id, { name: 'DEMO TWO', vms: [vm()] }).name).toBe('DEMO TWO');
      const bytes = readFileSync(path, 'utf8');
      expect(() => store.update(demo.id, { name: 'other', vms: [vm()] })).toThrow(
        expect.objectContaining({ code: 'conflict', message: expect.stringMatching(/"Other" already exists/) }),
      );
      expect(() => store.update(demo.id, { name: 'Dup', vms: [vm(), vm()] })).toThrow(
        expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/unique/) }),
      );
      expect(() => store.update(TEST_TEMPLATE_ID, { name: 'Mine', vms: [vm()] })).toThrow(
        expect.objectContaining({ code: 'invalid_request', message: 'The bundled test template is built in and cannot be changed.' }),
      );
      expect(() => store.update('no-such-1', { name: 'Mine', vms: [vm()] })).toThrow(expect.objectContaining({ code: 'not_found' }));
      expect(() => store.update(`../x/${demo.id}`, { name: 'Mine', vms: [vm()] })).toThrow(expect.objectContaining({ code: 'not_found' }));
      expect(readFileSync(path, 'utf8')).toBe(bytes);
      expect(files()).toEqual([`${demo.id}.json`, `${other.id}.json`].sort());
    },
  );

  it('deletes a user template; refuses the built-in one and an unknown or unsafe id, changing nothing', () => {
    const keep = store.create({ name: 'Keep', vms: [vm()] });
    const gone = store.create({ name: 'Gone', vms: [vm()] });
    store.delete(gone.id);
    expect(store.get(gone.id)).toBeNull();
    expect(files()).toEqual([`${keep.id}.json`]);
    expect(() => store.delete(TEST_TEMPLATE_ID)).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/built in/) }),
    );
    expect(() => store.delete(gone.id)).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(() => store.delete('../lab-templates/' + keep.id)).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(files()).toEqual([`${keep.id}.json`]);
  });

  it('skips a bad file with a logged reason and still lists the good ones', () => {
    const good = store.create({ name: 'Good', vms: [vm()] });
    const bad = (name: string, body: string) => writeFileSync(join(dir, name), body);
    bad('broken.json', '{ not json');
    bad(
      'too-big.json',
      JSON.stringify({
        version: 1,
        id: 'too-big',
        name: 'Big',
        description: null,
        createdAt: 'x',
        vms: [vm({ cpus: 1000, requireAttestation: false })],
      }),
    );
    bad(
      'renamed.json',
      JSON.stringify({
        version: 1,
        id: 'other',
        name: 'Renamed',
        description: null,
        createdAt: 'x',
        vms: [vm({ requireAttestation: false })],
      }),
    );
    bad(
      `${TEST_TEMPLATE_ID}.json`,
      JSON.stringify({
        version: 1,
        id: TEST_TEMPLATE_ID,
        name: 'Shadow',
        description: null,
        createdAt: 'x',
        vms: [vm({ requireAttestation: false })],
      }),
    );
    bad(
      'zz-same-name.json',
      JSON.stringify({
        version: 1,
        id: 'zz-same-name',
        name: 'GOOD',
        description: null,
        createdAt: 'x',
        vms: [vm({ requireAttestation: false })],
      }),
    );
    bad('notes.txt', 'ignored: not a .json file');
    expect(store.list().map((t) => t.id)).toEqual([TEST_TEMPLATE_ID, good.id]);
    const reasons = Object.fromEntries(warnings.map((w) => [String(w.fields?.file).split('/').pop(), String(w.fields?.reason)]));
    expect(reasons).toEqual({
      'broken.json': expect.stringMatching(/not JSON/),
      'too-big.json': expect.stringMatching(/vms\.0\.cpus/),
      'renamed.json': expect.stringMatching(/does not match the file name/),
      [`${TEST_TEMPLATE_ID}.json`]: expect.stringMatching(/reserved/),
      'zz-same-name.json': expect.stringMatching(/already named "GOOD"/),
    });
  });

  it('leaves no temporary file behind after writes', () => {
    for (const n of ['a', 'b', 'c']) store.create({ name: n, vms: [vm()] });
    expect(files().every((f) => f.endsWith('.json'))).toBe(true);
    expect(files()).toHaveLength(3);
  });
});
