import { z } from 'zod';
import { ERROR_CODES } from './errors';

export const wireErrorSchema = z.strictObject({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  detail: z.unknown().optional(),
});
