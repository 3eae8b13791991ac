/**
 * The event-log check without booting: a log recorded from a real boot of the test image (QEMU 7.2
 * + OVMF 2022.11 + swtpm, 2 CPUs / 2048 MiB; fixtures/) is extended event by event into a real
 * swtpm, the real guest-quote.sh quotes it and sends the log, and the verifier replays it and
 * checks each event against the references that boot had to match (fixtures/*.expectations.json,
 * computed from the files by attest/references.ts). Then the log or what the TPM measured is
 * changed: a kernel, initrd or command line of one byte more (the quote verifies, the event check
 * names the event); a truncated, reordered or extended log, or a forged one that claims the
 * references while the PCRs say otherwise (the replay does not equal the quote: refused); unknown
 * event types fail closed, machine-describing ones pass. tpm2_eventlog and tpm2_checkquote run on
 * the same logs and quotes.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EV, parseEventLog, replay } from '../../../main/vm-manager/attest/eventlog';
import { newPolicy, type ImagePolicy } from '../../../main/vm-manager/attest/policy';
import {
  expectationsFor,
  LINUX_TAG_INITRD,
  LINUX_TAG_LOAD_OPTIONS,
  type Expectations,
  type References,
} from '../../../main/vm-manager/attest/references';
import type { QuoteVerdict } from '../../../main/vm-manager/attest/verify';
import { needs } from '../../support/system';
import {
  eventlogReplay,
  extendInto,
  rawEvent,
  readRaw,
  sha256Of,
  withSha256,
  writeRaw,
  type RawEvent,
  type RawLog,
} from './eventlog-tools';
import {
  SYSTEM_NEEDS,
  checkquote,
  cleanup,
  guestPath,
  runGuestQuote,
  startMetadataStub,
  startSwtpm,
  tempDir,
  type MetadataStub,
  type WireBody,
} from './harness';

const skip = needs([...SYSTEM_NEEDS, 'tpm2_eventlog']);
const fixture = (n: string) => fileURLToPath(new URL(`./fixtures/${n}`, import.meta.url));
const LOG = readRaw(readFileSync(fixture('ovmf-kernel-2x2048.eventlog')));
const EX = JSON.parse(readFileSync(fixture('ovmf-kernel-2x2048.expectations.json'), 'utf8')) as {
  firmware: References['firmware'];
  apps: Record<string, string>;
  tags: Record<string, { sha256: string; what: string }>;
};
const expectations: Expectations = {
  firmware: EX.firmware,
  apps: new Map(Object.entries(EX.apps)),
  requiredApps: Object.keys(EX.apps),
  tags: new Map(Object.entries(EX.tags).map(([k, v]) => [Number(k), v])),
  grub: null,
};
const PCRS = '0,1,2,3,4,5,6,7,9,11';
const H = (c: string) => c.repeat(64);
// An image policy with references (their content is the expectations above; the verifier only needs to know it has them).
const policy: ImagePolicy = {
  ...newPolicy('povdesk-test', 'fixture'),
  pcrs: { initrd: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11], ready: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13] },
  references: {
    made_at: '2026-12-06T02:27:42Z',
    firmware: EX.firmware,
    boot: {
      kind: 'kernel',
      kernel: { file: 'vmlinuz', sha256: H('1'), size: 1, authenticode: H('2') },
      initrd: { file: 'initrd.img', sha256: EX.tags[String(LINUX_TAG_INITRD)]!.sha256, size: 1 },
      cmdline: 'x',
      load_options_sha256: EX.tags[String(LINUX_TAG_LOAD_OPTIONS)]!.sha256,
      loader: 'qemu-x86-linux-q35',
    },
  },
};

const index = (type: number, pcr: number) => LOG.events.findIndex((e) => e.type === type && e.pcr === pcr);
const replaced = (log: RawLog, i: number, e: RawEvent): RawLog => ({ ...log, events: log.events.map((x, j) => (j === i ? e : x)) });
const changedDigest = (e: RawEvent) => withSha256(e, createHash('sha256').update(sha256Of(e)).update('one byte more').digest('hex'));

describe.skipIf(skip !== null)('the event log, replayed and checked against reference measurements (real swtpm, no boot)', () => {
  let root: string;
  let bin: string;
  let stub: MetadataStub;
  let n = 0;

  beforeAll(async () => {
    root = tempDir('evlog');
    bin = await guestPath(root);
    stub = await startMetadataStub({ vmId: 'ev000001', pinnedAk: null, policy, learn: false, expectations });
  });
  afterAll(async () => {
    await stub?.close();
    if (root) cleanup(root);
  });

  /**
   * A fresh swtpm measured `measured` (default: the log's own events); the guest sends `sent`
   * (default: the log; null: no log). Returns the script's exit, the verdict and the files.
   */
  async function attest(
    log: RawLog,
    o: { measured?: RawEvent[]; sent?: Buffer | null; bin?: string; expectations?: Expectations; pcrs?: string } = {},
  ) {
    const name = `c${n++}`;
    const tpm = await startSwtpm(root, name);
    try {
      await extendInto(tpm.tcti, o.measured ?? log.events);
      const file = join(root, `${name}.eventlog`);
      const sent = o.sent === undefined ? writeRaw(log) : o.sent;
      if (sent) writeFileSync(file, sent);
      stub.state.pinnedAk = tpm.ak.fingerprint;
      stub.state.expectations = o.expectations ?? expectations;
      const r = await runGuestQuote(['initrd', '127.0.0.1', String(stub.port)], {
        bin: o.bin ?? bin,
        tcti: tpm.tcti,
        stateDir: join(root, `g-${name}`),
        extra: { ATTEST_PCRS: o.pcrs ?? PCRS, ATTEST_EVENT_LOG: sent ? file : join(root, 'none') },
      });
      const got = stub.received.at(-1)!;
      const body = got.body as WireBody;
      const quoted: Record<string, string> = {};
      body.pcr_list
        .split(',')
        .map(Number)
        .sort((a, b) => a - b)
        .forEach(
          (p, i) =>
            (quoted[String(p)] = Buffer.from(body.pcrs, 'base64')
              .subarray(i * 32, i * 32 + 32)
              .toString('hex')),
        );
      return { code: r.code, stderr: r.stderr, verdict: got.verdict as QuoteVerdict, body, quoted, file, dir: join(root, `cq-${name}`) };
    } finally {
      await tpm.stop();
    }
  }
  const firmwarePcrs = ['0', '1', '2', '3', '4', '5', '6', '7', '9'];

  it("the recorded boot: the replay equals the quote (ours and tpm2_eventlog's), every event passes, tpm2_checkquote accepts", async () => {
    const a = await attest(LOG);
    expect(a.code, a.stderr).toBe(0);
    expect(a.verdict).toMatchObject({ ok: true, failed: null, events: { count: 26, checked: 22, allowed: 3, mismatch: null } });
    expect(a.verdict.message).toMatch(
      /^initrd quote verified; event log replayed \(26 events: 22 checked against the references, 3 allowed by type\)$/,
    );
    expect(a.body.event_log).toBe(readFileSync(fixture('ovmf-kernel-2x2048.eventlog')).toString('base64'));
    const theirs = await eventlogReplay(a.file);
    const ours = replay(parseEventLog(readFileSync(a.file)));
    for (const p of firmwarePcrs) {
      expect(theirs[p], `tpm2_eventlog PCR ${p}`).toBe(a.quoted[p]);
      expect(ours[p], `our replay PCR ${p}`).toBe(a.quoted[p]);
    }
    expect(await checkquote(a.dir, a.body)).toBe(true);
  });

  it('a guest with curl and no nc (a baked Debian template) sends the same quote and log, and verifies', async () => {
    const curlBin = join(root, 'curl-bin');
    mkdirSync(curlBin);
    for (const f of readdirSync(bin)) if (f !== 'nc') symlinkSync(readlinkSync(join(bin, f)), join(curlBin, f));
    symlinkSync('/usr/bin/curl', join(curlBin, 'curl'));
    const a = await attest(LOG, { bin: curlBin });
    expect(a.code, a.stderr).toBe(0);
    expect(a.verdict).toMatchObject({ ok: true, events: { count: 26, mismatch: null } });
    expect(a.body.event_log).toBe(readFileSync(fixture('ovmf-kernel-2x2048.eventlog')).toString('base64'));
  });

  const oneByte: [string, number, number, RegExp][] = [
    ['a kernel', EV.EFI_BOOT_SERVICES_APPLICATION, 4, /the kernel vmlinuz as QEMU loads it at 2048 MiB/],
    ['an initrd', EV.EVENT_TAG, 9, /^[0-9a-f]{64}$/],
    ['a command line', EV.EVENT_TAG, 9, /^[0-9a-f]{64}$/],
  ];
  for (const [what, type, pcr, expected] of oneByte) {
    it(`${what} changed after the references were made: the quote verifies, the event check names the event`, async () => {
      const i =
        what === 'a command line'
          ? LOG.events.findIndex((e) => e.type === EV.EVENT_TAG && e.data.readUInt32LE(0) === LINUX_TAG_LOAD_OPTIONS)
          : what === 'an initrd'
            ? LOG.events.findIndex((e) => e.type === EV.EVENT_TAG && e.data.readUInt32LE(0) === LINUX_TAG_INITRD)
            : index(type, pcr);
      const changed = replaced(LOG, i, changedDigest(LOG.events[i]!));
      const a = await attest(changed);
      expect(a.code).toBe(1);
      expect(a.verdict).toMatchObject({ ok: false, failed: 'event' });
      expect(a.verdict.events?.mismatch).toMatchObject({
        event: i + 1,
        type: type === EV.EVENT_TAG ? 'EV_EVENT_TAG' : 'EV_EFI_BOOT_SERVICES_APPLICATION',
        pcr,
        seen: sha256Of(changed.events[i]!),
      });
      expect(a.verdict.events!.mismatch!.expected).toMatch(expected);
      expect(a.verdict.message).toContain(
        `event ${i + 1} (${a.verdict.events!.mismatch!.type}, PCR ${pcr}) does not match the image's reference measurements`,
      );
      // the quote itself is genuine: tpm2_checkquote accepts it, and the log replays to it
      expect(await checkquote(a.dir, a.body)).toBe(true);
      expect((await eventlogReplay(a.file))[String(pcr)]).toBe(a.quoted[String(pcr)]);
    });
  }

  const refused: [string, (l: RawLog) => { log: RawLog; measured?: RawEvent[] }, string][] = [
    ['truncated (its last event dropped)', (l) => ({ log: { ...l, events: l.events.slice(0, -1) }, measured: l.events }), '5'],
    [
      'reordered (the two PCR 9 events swapped)',
      (l) => {
        const [a, b] = l.events.flatMap((e, i) => (e.pcr === 9 ? [i] : []));
        const events = [...l.events];
        [events[a!], events[b!]] = [events[b!]!, events[a!]!];
        return { log: { ...l, events }, measured: l.events };
      },
      '9',
    ],
    [
      'extended (one more application in PCR 4)',
      (l) => ({
        log: {
          ...l,
          events: [
            ...l.events,
            rawEvent(
              l,
              4,
              EV.EFI_BOOT_SERVICES_APPLICATION,
              l.events[index(EV.EFI_BOOT_SERVICES_APPLICATION, 4)]!.data,
              Buffer.from('another app'),
            ),
          ],
        },
        measured: l.events,
      }),
      '4',
    ],
    [
      'forged: it claims the reference kernel while the TPM measured another',
      (l) => {
        const i = index(EV.EFI_BOOT_SERVICES_APPLICATION, 4);
        return { log: l, measured: replaced(l, i, changedDigest(l.events[i]!)).events };
      },
      '4',
    ],
  ];
  for (const [what, make, pcr] of refused) {
    it(`a log ${what} does not replay to the quote: refused`, async () => {
      const { log, measured } = make(LOG);
      const a = await attest(log, { measured });
      expect(a.code).toBe(1);
      expect(a.verdict).toMatchObject({ ok: false, failed: 'event_log', events: null });
      expect(a.verdict.message).toMatch(
        /^the event log does not replay to the quoted PCRs \(pcr \d+ replays to [0-9a-f]{64}, the quote says [0-9a-f]{64}.*\): it was truncated, reordered, extended or forged$/,
      );
      expect(a.verdict.mismatches.map((m) => m.pcr)).toEqual([pcr]);
      // tpm2_eventlog replays the sent log to the same wrong value; tpm2_checkquote accepts the (genuine) quote
      const theirs = await eventlogReplay(a.file);
      expect(theirs[pcr]).not.toBe(a.quoted[pcr]);
      expect(theirs[pcr]).toBe(a.verdict.mismatches[0]!.expected);
      expect(await checkquote(a.dir, a.body)).toBe(true);
    });
  }

  it("the PEI volume's digest moves with the machine's shape: allowed; the DXE volume's does not", async () => {
    const pei = LOG.events.findIndex((e) => e.type === EV.EFI_PLATFORM_FIRMWARE_BLOB);
    const a = await attest(replaced(LOG, pei, changedDigest(LOG.events[pei]!)));
    expect(a.code, a.stderr).toBe(0);
    const dxe = replaced(LOG, pei + 1, changedDigest(LOG.events[pei + 1]!));
    const b = await attest(dxe);
    expect(b.verdict.events?.mismatch).toMatchObject({
      event: pei + 2,
      type: 'EV_EFI_PLATFORM_FIRMWARE_BLOB',
      pcr: 0,
      expected: EX.firmware.volumes[1]!.sha256,
    });
    expect(b.verdict.events!.mismatch!.what).toMatch(/the host's firmware is not the build the references were made with/);
  });

  it('machine-describing events pass by type; an unknown type fails closed, naming it', async () => {
    const smbios = rawEvent(LOG, 1, EV.EFI_HANDOFF_TABLES, Buffer.from('SMBIOS of another VM size'));
    const withTables = { ...LOG, events: [...LOG.events.slice(0, 13), smbios, ...LOG.events.slice(13)] };
    const a = await attest(withTables);
    expect(a.code, a.stderr).toBe(0);
    expect(a.verdict.events).toMatchObject({ count: 27, allowed: 4, mismatch: null });
    const microcode = rawEvent(LOG, 1, EV.CPU_MICROCODE, Buffer.from('some microcode'));
    const b = await attest({ ...LOG, events: [...LOG.events.slice(0, 13), microcode, ...LOG.events.slice(13)] });
    expect(b.verdict).toMatchObject({ ok: false, failed: 'event' });
    expect(b.verdict.events?.mismatch).toMatchObject({
      event: 14,
      type: 'EV_CPU_MICROCODE',
      pcr: 1,
      what: expect.stringMatching(/does not know: refused rather than ignored/),
    });
  });

  it('no log, a log that is not one, or a log that reaches a PCR the quote leaves out: refused', async () => {
    const none = await attest(LOG, { sent: null });
    expect(none.verdict).toMatchObject({ ok: false, failed: 'event_log' });
    expect(none.verdict.message).toMatch(/^the quote came without the firmware event log/);
    const garbage = await attest(LOG, { sent: Buffer.from('not an event log at all, but long enough to be read as a header') });
    expect(garbage.verdict).toMatchObject({ ok: false, failed: 'event_log' });
    expect(garbage.verdict.message).toMatch(/^the event log is malformed: /);
    const pcr14 = rawEvent(LOG, 14, EV.IPL, Buffer.from('MokList\0'));
    const beyond = await attest({ ...LOG, events: [...LOG.events, pcr14] });
    expect(beyond.verdict).toMatchObject({ ok: false, failed: 'event_log' });
    expect(beyond.verdict.message).toBe(
      `event ${LOG.events.length + 1} of the log extends PCR 14, which the quote does not cover: the log cannot be checked ` +
        `against this quote`,
    );
  });

  // A boot of the bake's Debian base through GRUB (its tpm module: files into PCR 9, commands and the
  // kernel command line into PCR 8), recorded with the references its import made (fixtures/).
  const GRUB = readRaw(readFileSync(fixture('ovmf-grub-debian.eventlog')));
  const grubRefs = (JSON.parse(readFileSync(fixture('ovmf-grub-debian.references.json'), 'utf8')) as { references: References }).references;
  const grubX = () => expectationsFor(grubRefs, '/nonexistent', { memoryMiB: 1024 });
  const ipl = (text: string) => GRUB.events.findIndex((e) => e.type === EV.IPL && e.data.toString('latin1').startsWith(text));

  it("a GRUB boot: replay equals the quote (ours, tpm2_eventlog's) for PCRs 0-9; GRUB's files, commands, command line pass", async () => {
    const a = await attest(GRUB, { expectations: grubX(), pcrs: '0,1,2,3,4,5,6,7,8,9,11' });
    expect(a.code, a.stderr).toBe(0);
    expect(a.verdict.events).toMatchObject({ count: GRUB.events.length + 1, mismatch: null });
    expect(a.verdict.events!.checked).toBeGreaterThan(40); // separators, volumes, variables, apps, GRUB's files and command line
    const theirs = await eventlogReplay(a.file);
    for (const p of ['0', '4', '5', '8', '9']) expect(theirs[p], `PCR ${p}`).toBe(a.quoted[p]);
    expect(await checkquote(a.dir, a.body)).toBe(true);
  });

  const grubChanges: [string, number, RegExp, RegExp][] = [
    ['grub.cfg', ipl('(hd0,gpt3)/boot/grub/grub.cfg'), /^[0-9a-f]{64}$/, /the file \(hd0,gpt3\)\/boot\/grub\/grub\.cfg read by GRUB/],
    ['the kernel file', ipl('/boot/vmlinuz-'), /^[0-9a-f]{64}$/, /the file \/boot\/vmlinuz-.* read by GRUB/],
    [
      'the kernel command line',
      ipl('kernel_cmdline: '),
      /^\/boot\/vmlinuz-\S+ root=UUID=\S+ ro console=tty0 console=ttyS0,115200$/,
      /the kernel command line GRUB passed/,
    ],
  ];
  for (const [what, i, expected, said] of grubChanges) {
    it(`GRUB: ${what} changed after the references were made is named (PCR ${GRUB.events[i]?.pcr})`, async () => {
      expect(i).toBeGreaterThan(0);
      const changed = replaced(GRUB, i, changedDigest(GRUB.events[i]!));
      const a = await attest(changed, { expectations: grubX(), pcrs: '0,1,2,3,4,5,6,7,8,9,11' });
      expect(a.code).toBe(1);
      expect(a.verdict).toMatchObject({ ok: false, failed: 'event' });
      expect(a.verdict.events?.mismatch).toMatchObject({ event: i + 1, type: 'EV_IPL', pcr: GRUB.events[i]!.pcr });
      expect(a.verdict.events!.mismatch!.expected).toMatch(expected);
      expect(a.verdict.events!.mismatch!.what).toMatch(said);
    });
  }

  it('GRUB: a log that reaches PCR 8 while the quote leaves 8 out is refused (disk images quote 0-9)', async () => {
    const a = await attest(GRUB, { expectations: grubX(), pcrs: '0,1,2,3,4,5,6,7,9,11' });
    expect(a.verdict).toMatchObject({ ok: false, failed: 'event_log' });
    expect(a.verdict.message).toMatch(/extends PCR 8, which the quote does not cover/);
  });
});
