import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { ERROR_CODES } from './errors';

export const wireErrorSchema = lazySchema(() =>
  z.strictObject({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    detail: z.unknown().optional(),
  }),
);
