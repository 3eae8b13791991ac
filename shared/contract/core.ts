import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { JOB_KIND } from './job-kinds';
import { method, noArgs, ok, stream, lazyMethods } from './define';
import { wireErrorSchema } from './wire-schema';
import { refineCredentialUrl } from '../url-policy';

// ---- jobs ----------------------------------------------------------------------------------
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted'] as const;
export const jobState = lazySchema(() => z.enum(JOB_STATES));
export type JobState = z.infer<typeof jobState>;

export const jobProgress = lazySchema(() =>
  z.strictObject({
    step: z.string(),
    fraction: z.number().min(0).max(1).nullable(),
    message: z.string(),
  }),
);

export const jobKind = lazySchema(() => z.enum(JOB_KIND));

export const jobRecord = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    kind: jobKind,
    title: z.string(),
    subject: z.string().nullable(),
    routine: z.boolean(),
    state: jobState,
    progress: jobProgress,
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    error: wireErrorSchema.nullable(),
    result: z.unknown().nullable(),
  }),
);
export type JobRecord = z.infer<typeof jobRecord>;

export const jobLogLine = lazySchema(() =>
  z.strictObject({ at: z.string(), level: z.enum(['info', 'warn', 'error']), message: z.string() }),
);
export type JobLogLine = z.infer<typeof jobLogLine>;

const id = lazySchema(() => z.string().min(1).max(200));

// ---- settings ------------------------------------------------------------------------------
export const keyringStatus = lazySchema(() =>
  z.strictObject({
    backend: z.enum(['keytar', 'memory']),
    available: z.boolean(),
    message: z.string(),
    remedy: z.string().nullable(),
  }),
);
export type KeyringStatus = z.infer<typeof keyringStatus>;

export const skytapSettings = lazySchema(() =>
  z.strictObject({
    username: z.string(),
    url: z.string(),
    projectId: z.string(),
    tokenSet: z.boolean(),
    /** Names of environment variables that override stored values in this process. */
    fromEnv: z.array(z.string()),
  }),
);
export type SkytapSettings = z.infer<typeof skytapSettings>;

export const settingsView = lazySchema(() =>
  z.strictObject({
    skytap: skytapSettings,
    keyring: keyringStatus,
    paths: z.strictObject({ home: z.string(), database: z.string(), logs: z.string() }),
  }),
);
export type SettingsView = z.infer<typeof settingsView>;

const skytapUrl = lazySchema(() =>
  z
    .string()
    .max(300)
    .refine((s) => /^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(s), 'must be an http(s) URL')
    .superRefine(refineCredentialUrl('the Skytap URL')),
);

export const coreMethods = lazyMethods({
  'app.info': () =>
    method(
      'Version, platform and where data and logs live',
      noArgs,
      z.strictObject({
        version: z.string(),
        platform: z.string(),
        node: z.string(),
        electron: z.string().nullable(),
        home: z.string(),
        logs: z.string(),
      }),
    ),
  'app.diagnostics': () =>
    method(
      'A text bundle for a bug report: versions, settings (no secrets), host report, recent logs',
      noArgs,
      z.strictObject({ text: z.string() }),
    ),
  'settings.get': () => method('Current settings; says whether a token is set, never the token', noArgs, settingsView),
  'settings.saveSkytap': () =>
    method(
      'Save Skytap username, URL and project id; the token goes to the keychain (omit it to keep the stored one)',
      z.strictObject({
        username: z.string().trim().min(1).max(200),
        apiToken: z.string().min(1).max(500).optional(),
        url: skytapUrl.optional(),
        projectId: z
          .string()
          .trim()
          .max(40)
          .regex(/^[0-9]*$/, 'must be digits (or empty for account-wide)')
          .optional(),
      }),
      settingsView,
    ),
  'settings.clearSkytapToken': () => method('Remove the Skytap API token from the keychain', noArgs, settingsView),
  'settings.removeSkytap': () =>
    method(
      'Remove the Skytap account: the username, URL and project id from the settings and the token from the keychain (values from ' +
        'environment variables stay for this process)',
      noArgs,
      settingsView,
    ),
  'jobs.list': () =>
    method(
      'Job history, newest first; routine sweeps only when includeRoutine is true',
      z.strictObject({
        includeRoutine: z.boolean().optional(),
        limit: z.number().int().min(1).max(1000).optional(),
        subject: z.string().max(200).optional(),
      }),
      z.strictObject({ jobs: z.array(jobRecord) }),
    ),
  'jobs.get': () => method('One job with its log', z.strictObject({ id }), z.strictObject({ job: jobRecord, log: z.array(jobLogLine) })),
  'jobs.cancel': () => method('Ask a queued or running job to stop', z.strictObject({ id }), ok),
});

export const coreStreams = {
  /** Keyed by job id, and by '*' for every job. */
  'jobs.update': stream('Job state and progress snapshots', jobRecord),
} as const;
