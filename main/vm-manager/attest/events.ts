/**
 * The event check: every event of a replayed log against one VM's expectations (references.ts).
 * Code and configuration events are compared with the references; the event types that only
 * describe the machine are allowed by type (ALLOWED, each with why it is safe: docs/attestation-verifier.md
 * lists the same table); anything else fails closed. The first event that does not pass is named
 * with its type, PCR, what was expected and what was seen.
 */
import { createHash } from 'node:crypto';
import { EV, eventTypeName, type EventLog, type TcgEvent } from './eventlog';
import { variableEventData } from './firmware';
import type { Expectations } from './references';

export interface EventMismatch {
  /** position in the log (0 = the Spec ID header) */
  event: number;
  type: string;
  pcr: number;
  expected: string;
  seen: string;
  /** what the event measures and why it does not pass */
  what: string;
}

export interface EventCheck {
  ok: boolean;
  /** events compared with a reference */
  checked: number;
  /** events allowed by type (they describe the machine) */
  allowed: number;
  mismatch: EventMismatch | null;
}

/**
 * Event types allowed by type alone, per PCR, and why each is safe. None of them carries code or
 * configuration that decides what runs: what they lead to is measured by the events that are
 * compared (the firmware volumes, drivers, applications, the kernel, initrd, command line).
 */
export const ALLOWED: { type: number; pcrs: number[]; why: string }[] = [
  {
    type: EV.NO_ACTION,
    pcrs: [...Array(24).keys()],
    why: 'never extended into a PCR (Spec ID, StartupLocality): it cannot change what a quote attests',
  },
  {
    type: EV.S_CRTM_VERSION,
    pcrs: [0],
    why: "the firmware's version string, a name: the firmware's code is compared by its volumes' digests",
  },
  {
    type: EV.EFI_VARIABLE_BOOT,
    pcrs: [1],
    why: 'BootOrder and Boot#### name which application to start; the application started is compared in PCR 4',
  },
  { type: EV.EFI_VARIABLE_BOOT2, pcrs: [1], why: 'as EV_EFI_VARIABLE_BOOT' },
  {
    type: EV.EFI_HANDOFF_TABLES,
    pcrs: [1],
    why: "the SMBIOS and ACPI tables QEMU builds from the VM's size and devices: a description of the machine",
  },
  { type: EV.EFI_HANDOFF_TABLES2, pcrs: [1], why: 'as EV_EFI_HANDOFF_TABLES' },
  { type: EV.PLATFORM_CONFIG_FLAGS, pcrs: [1], why: 'platform configuration flags: a description of the machine' },
  { type: EV.TABLE_OF_DEVICES, pcrs: [1], why: 'the list of devices: a description of the machine' },
  {
    type: EV.EFI_GPT_EVENT,
    pcrs: [5],
    why: "the boot disk's partition table: its layout, not code; what is loaded from the partitions is compared in PCRs 4 and 9",
  },
  { type: EV.EFI_GPT_EVENT2, pcrs: [5], why: 'as EV_EFI_GPT_EVENT' },
];

/** EV_EFI_ACTION strings the firmware logs at fixed points of the boot (their digest is of the string). */
export const ACTIONS: Record<number, string[]> = {
  4: ['Calling EFI Application from Boot Option', 'Returning from EFI Application from Boot Option'],
  5: ['Exit Boot Services Invocation', 'Exit Boot Services Returned with Success', 'Exit Boot Services Returned with Failure'],
};

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const SEPARATOR = Buffer.alloc(4);
const GRUB_CMD = 'grub_cmd: ';
const GRUB_CMDLINE = 'kernel_cmdline: ';

/** A GRUB file event's path: "(hd0,gpt2)/boot/grub/grub.cfg" → { part: "gpt2", path: "/boot/grub/grub.cfg" }. */
export function grubPath(s: string): { part: string | null; path: string } {
  const m = /^\(([^)]*)\)(.*)$/.exec(s);
  if (!m) return { part: null, path: s };
  const part = /,(?:gpt|msdos)?(\d+)$/.exec(m[1]!);
  return { part: part ? part[1]! : null, path: m[2] || '/' };
}

/** The reference digest of a file GRUB read: keyed "<partition number>:<path>", or by path alone when the event names no partition. */
function grubFile(files: Map<string, string>, raw: string): string[] {
  const { part, path } = grubPath(raw);
  const exact = [...files].filter(([k]) => (part === null ? k.slice(k.indexOf(':') + 1) === path : k === `${part}:${path}`));
  if (exact.length) return exact.map(([, d]) => d);
  // FAT names are case-insensitive, and GRUB's FAT driver lowers short names
  const lower = (part === null ? path : `${part}:${path}`).toLowerCase();
  return [...files].filter(([k]) => (part === null ? k.slice(k.indexOf(':') + 1) : k).toLowerCase() === lower).map(([, d]) => d);
}

const text = (b: Buffer) => b.toString('latin1').replace(/\0+$/, '');

export function checkEvents(log: EventLog, x: Expectations): EventCheck {
  const out: EventCheck = { ok: false, checked: 0, allowed: 0, mismatch: null };
  const fail = (e: TcgEvent, expected: string, seen: string, what: string): EventCheck => {
    out.mismatch = { event: e.index, type: eventTypeName(e.type), pcr: e.pcr, expected, seen, what };
    return out;
  };
  const volumes = x.firmware.volumes;
  let volume = 0;
  const drivers = new Set(x.firmware.option_roms.flatMap((r) => r.drivers));
  const sbSeen = new Set<string>();
  const appsSeen = new Set<string>();
  const tagsSeen = new Set<number>();
  let grubCfgVerified = false;
  let cmdlineSeen = false;
  let kernelFileSeen = false;

  for (const e of log.events.slice(1)) {
    const digest = e.sha256!;
    const allowed = ALLOWED.find((a) => a.type === e.type && a.pcrs.includes(e.pcr));
    if (allowed) {
      out.allowed++;
      continue;
    }
    out.checked++;
    switch (e.type) {
      case EV.SEPARATOR:
        if (e.pcr > 7 || !e.data.equals(SEPARATOR) || digest !== sha256(SEPARATOR)) {
          return fail(
            e,
            `a separator in PCR 0-7 over 00000000 (digest ${sha256(SEPARATOR)})`,
            `data ${e.data.toString('hex')}, digest ${digest}`,
            'an error separator or one outside PCRs 0-7: the firmware reported a failure, or the log was altered',
          );
        }
        continue;
      case EV.EFI_ACTION: {
        const s = e.data.toString('latin1');
        if (!(ACTIONS[e.pcr] ?? []).includes(s) || digest !== sha256(s)) {
          return fail(
            e,
            `one of ${JSON.stringify(ACTIONS[e.pcr] ?? [])} with its sha256`,
            `"${s.slice(0, 80)}" digest ${digest}`,
            'a firmware action this verifier does not know at this PCR',
          );
        }
        continue;
      }
      case EV.EFI_PLATFORM_FIRMWARE_BLOB:
      case EV.EFI_PLATFORM_FIRMWARE_BLOB2: {
        const v = volumes[volume];
        const lenAt = e.type === EV.EFI_PLATFORM_FIRMWARE_BLOB ? 8 : 1 + (e.data[0] ?? 0) + 8;
        const length = e.data.length >= lenAt + 8 ? Number(e.data.readBigUInt64LE(lenAt)) : -1;
        if (e.pcr !== 0 || !v)
          return fail(
            e,
            `${volumes.length} firmware volumes in PCR 0`,
            `volume ${volume + 1} in PCR ${e.pcr}, digest ${digest}`,
            `a firmware volume the references (${x.firmware.code.path}) do not list`,
          );
        if (length !== v.length)
          return fail(
            e,
            `volume ${volume + 1} of ${v.length} bytes`,
            `${length} bytes`,
            `firmware volume ${volume + 1} of ${x.firmware.code.path}`,
          );
        if (!v.pei && digest !== v.sha256) {
          return fail(
            e,
            v.sha256,
            digest,
            `firmware volume ${volume + 1} (DXE) of ${x.firmware.code.path}: the host's firmware is not the build the references ` +
              `were made with`,
          );
        }
        volume++;
        continue;
      }
      case EV.EFI_VARIABLE_DRIVER_CONFIG: {
        const nameLen = e.data.length >= 32 ? Number(e.data.readBigUInt64LE(16)) : -1;
        const name = nameLen > 0 && 32 + nameLen * 2 <= e.data.length ? e.data.toString('utf16le', 32, 32 + nameLen * 2) : '';
        const want = x.firmware.secure_boot[name];
        if (e.pcr !== 7 || want === undefined)
          return fail(
            e,
            `a Secure Boot variable (${Object.keys(x.firmware.secure_boot).join(', ')}) in PCR 7`,
            `"${name}" in PCR ${e.pcr}`,
            'a configuration variable the references do not list',
          );
        const expected = variableEventData(name, Buffer.from(want, 'hex'));
        if (!e.data.equals(expected) || digest !== sha256(expected)) {
          return fail(
            e,
            `${name} = ${want || '(empty)'} (digest ${sha256(expected)})`,
            `digest ${digest}`,
            `the Secure Boot variable ${name}: this VM's firmware variables are not the template's (${x.firmware.vars.path})`,
          );
        }
        sbSeen.add(name);
        continue;
      }
      case EV.EFI_BOOT_SERVICES_DRIVER:
      case EV.EFI_RUNTIME_SERVICES_DRIVER:
        if (e.pcr !== 2 || !drivers.has(digest))
          return fail(
            e,
            `one of ${[...drivers].join(', ') || '(none)'}`,
            digest,
            `an EFI driver from a device's option ROM (${x.firmware.option_roms.map((r) => r.path).join(', ')})`,
          );
        continue;
      case EV.EFI_BOOT_SERVICES_APPLICATION: {
        const what = x.apps.get(digest);
        if (e.pcr !== 4 || !what)
          return fail(
            e,
            x.unresolved ?? [...x.apps].map(([d, w]) => `${d} (${w})`).join(' or '),
            digest,
            'an EFI application (a boot loader or a kernel) the references do not list',
          );
        appsSeen.add(digest);
        continue;
      }
      case EV.EVENT_TAG: {
        const id = e.data.length >= 8 ? e.data.readUInt32LE(0) : -1;
        const want = x.tags.get(id);
        if (e.pcr !== 9 || !want)
          return fail(
            e,
            [...x.tags].map(([t, w]) => `tag 0x${t.toString(16)} (${w.what})`).join(' or ') || 'no tagged event',
            `tag 0x${id.toString(16)} in PCR ${e.pcr}`,
            'a tagged event the references do not list',
          );
        if (digest !== want.sha256) return fail(e, want.sha256, digest, want.what);
        tagsSeen.add(id);
        continue;
      }
      case EV.IPL: {
        if (!x.grub)
          return fail(
            e,
            'no boot loader events (a kernel image boots without GRUB)',
            text(e.data).slice(0, 120),
            "a boot loader's measurement",
          );
        const s = text(e.data);
        if (e.pcr === 8 && s.startsWith(GRUB_CMDLINE)) {
          const line = s.slice(GRUB_CMDLINE.length);
          if (!x.grub.cmdlines.has(line) || digest !== sha256(line))
            return fail(e, [...x.grub.cmdlines].join(' | '), line, 'the kernel command line GRUB passed');
          cmdlineSeen = true;
          continue;
        }
        if (e.pcr === 8 && s.startsWith(GRUB_CMD)) {
          // A command of GRUB's own embedded configuration (in the boot loader compared in PCR 4) or
          // of a grub.cfg whose bytes were compared (PCR 9): the script running.
          if (!grubCfgVerified && appsSeen.size === 0)
            return fail(
              e,
              'GRUB commands only from a boot loader and a grub.cfg that match the references',
              s.slice(0, 120),
              'a GRUB command with no verified boot loader before it',
            );
          if (digest !== sha256(s.slice(GRUB_CMD.length)))
            return fail(e, sha256(s.slice(GRUB_CMD.length)), digest, 'a GRUB command whose digest is not that of its text');
          out.checked--;
          out.allowed++;
          continue;
        }
        if (e.pcr === 9) {
          const want = grubFile(x.grub.files, s);
          if (!want.includes(digest)) return fail(e, want[0] ?? 'a file the references list', digest, `the file ${s} read by GRUB`);
          if (/\/grub\.cfg$/.test(grubPath(s).path)) grubCfgVerified = true;
          if (/\/vmlinuz[^/]*$/.test(grubPath(s).path)) kernelFileSeen = true;
          continue;
        }
        return fail(
          e,
          'grub_cmd:, kernel_cmdline: (PCR 8) or a file (PCR 9)',
          `PCR ${e.pcr}: ${s.slice(0, 120)}`,
          'a boot loader event this verifier does not know',
        );
      }
      default:
        return fail(
          e,
          'an event type the verifier checks or allows (docs/attestation.md)',
          `${eventTypeName(e.type)} in PCR ${e.pcr}`,
          'an event this verifier does not know: refused rather than ignored',
        );
    }
  }
  // What must have been measured, whatever else was.
  const last = log.events[log.events.length - 1]!;
  const missing = (what: string, expected: string): EventCheck =>
    fail({ ...last, index: log.events.length, type: EV.NO_ACTION, pcr: 0, data: Buffer.alloc(0) }, expected, 'not in the log', what);
  if (volume < volumes.length)
    return missing(`firmware volume ${volume + 1} of ${volumes.length} was never measured`, `${volumes.length} volumes`);
  for (const name of Object.keys(x.firmware.secure_boot))
    if (!sbSeen.has(name)) return missing(`the Secure Boot variable ${name} was never measured`, name);
  if (!x.requiredApps.some((d) => appsSeen.has(d)))
    return missing('no expected EFI application was started', x.unresolved ?? x.requiredApps.map((d) => x.apps.get(d)).join(' or '));
  for (const [id, t] of x.tags) if (!tagsSeen.has(id)) return missing(`${t.what} was never measured`, t.sha256);
  if (x.grub && !grubCfgVerified) return missing('GRUB never measured a grub.cfg (is its tpm module in the image?)', 'a grub.cfg in PCR 9');
  if (x.grub && !kernelFileSeen) return missing('GRUB never measured a kernel file', 'a /boot/vmlinuz-* in PCR 9');
  if (x.grub && !cmdlineSeen) return missing('GRUB never measured the kernel command line', [...x.grub.cmdlines].join(' | '));
  out.ok = true;
  return out;
}
