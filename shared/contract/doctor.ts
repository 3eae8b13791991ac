import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { lazyMethods, method, noArgs } from './define';
import { DOCTOR_RESULTS } from './values';

/**
 * `povdesk doctor` and Settings → Check my accounts: read-only first-contact probes, each tied to
 * one named assumption in the docs (docs/skytap.md, share.md, pam.md, lab-platforms.md,
 * vm-manager-api.md, control-plane.md), each answered confirmed, contradicted (with what was seen) or
 * could not tell. Nothing is created, changed or deleted on any tenant.
 */
export { DOCTOR_RESULTS, DOCTOR_WORDS, type DoctorResult } from './values';
export const DOCTOR_AREAS = ['skytap', 'share', 'pam', 'vm-manager', 'control-plane'] as const;

export const doctorCheck = lazySchema(() =>
  z.strictObject({
    /** the assumption's name, as the doc cites it (`skytap.paging`) */
    id: z.string(),
    area: z.enum(DOCTOR_AREAS),
    /** which account it read (the Skytap user, a POV's PRA site, the remote manager's URL) */
    subject: z.string(),
    assumption: z.string(),
    /** where the assumption is written down */
    doc: z.string(),
    result: z.enum(DOCTOR_RESULTS),
    /** what was seen: the confirmation, what differed, or why it could not tell */
    seen: z.string(),
  }),
);
export type DoctorCheck = z.infer<typeof doctorCheck>;

export const doctorReport = lazySchema(() =>
  z.strictObject({
    checkedAt: z.string(),
    checks: z.array(doctorCheck),
    counts: z.strictObject({ confirmed: z.number().int(), contradicted: z.number().int(), unknown: z.number().int() }),
  }),
);
export type DoctorReport = z.infer<typeof doctorReport>;

export const doctorMethods = lazyMethods({
  'doctor.run': () =>
    method(
      'Check my accounts: read-only first-contact probes of what POV Desk assumes about Skytap, BeyondTrust, the remote ' +
        'vm-manager and the control plane; each confirmed, contradicted or could not tell',
      noArgs,
      doctorReport,
    ),
  'doctor.bundle': () =>
    method(
      'Write a redacted support bundle (a fresh doctor report, versions, settings without secrets, the last log lines) to one ' +
        'file under the data directory, to send to support',
      noArgs,
      z.strictObject({ path: z.string(), bytes: z.number().int(), report: doctorReport }),
    ),
});
