import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { method, noArgs, lazyMethods } from './define';

export const TEST_CONNECTION_OUTCOMES = ['ok', 'unauthorized', 'project_not_found', 'no_templates', 'failed'] as const;

export const testConnectionResult = lazySchema(() =>
  z.strictObject({
    outcome: z.enum(TEST_CONNECTION_OUTCOMES),
    /** Green only for ok: an empty catalogue is red because no POV can be created from it. */
    good: z.boolean(),
    message: z.string(),
    remedy: z.string().nullable(),
    templateCount: z.number().int().nonnegative().nullable(),
    reason: z.enum(['rate_limited', 'network', 'server']).nullable(),
    scope: z.enum(['account', 'project']),
  }),
);
export type TestConnectionResult = z.infer<typeof testConnectionResult>;

export const templateView = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    vmCount: z.number().int().nonnegative().nullable(),
    region: z.string().nullable(),
    busy: z.boolean(),
  }),
);
export type TemplateView = z.infer<typeof templateView>;

export const skytapMethods = lazyMethods({
  'skytap.testConnection': () =>
    method(
      'One page of GET /v2/templates with the SAVED settings (project-scoped when a Project ID is set), one retry',
      noArgs,
      testConnectionResult,
    ),
  'skytap.testForm': () =>
    method(
      'Test connection with the values given (the Settings form, saved or not), each field left out or blank taken from the saved ' +
        'settings; the saved token is only sent to the saved URL',
      z.strictObject({
        username: z.string().trim().max(200).optional(),
        apiToken: z.string().max(500).optional(),
        url: z.string().trim().max(300).optional(),
        projectId: z.string().trim().max(40).optional(),
      }),
      testConnectionResult,
    ),
  'skytap.listTemplates': () =>
    method(
      'Every template the saved account (or project) can see, walked to the end (the default retry budget)',
      noArgs,
      z.strictObject({ templates: z.array(templateView) }),
    ),
});
