import { z } from 'zod';
import { ERROR_CODES } from './errors';

export const wireErrorSchema = z
  .object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    detail: z.unknown().optional(),
  })
  .strict();
