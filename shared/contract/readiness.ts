import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { READINESS, READINESS_ITEM_STATES, READINESS_WORDS } from './values';

export { READINESS, READINESS_ITEM_STATES, READINESS_WORDS };

/**
 * Demo readiness: "is this POV ready for the customer?" answered by the core from what it
 * already knows (docs/readiness.md). The renderer, the CLI and agents ask the same method.
 */
export const readinessLevel = lazySchema(() => z.enum(READINESS));
export type ReadinessLevel = z.infer<typeof readinessLevel>;

export const READINESS_ITEMS = ['environment', 'controlNode', 'gateway', 'share', 'autoDelete', 'jobs'] as const;
export type ReadinessItemKey = (typeof READINESS_ITEMS)[number];

export const readinessItem = lazySchema(() =>
  z.strictObject({
    key: z.enum(READINESS_ITEMS),
    label: z.string(),
    /**
     * ok (counts as ready) | not_configured (an optional outside service the SE has not set up:
     * neutral, never lowers the badge; the action says how to add it) | attention | not_ready.
     */
    state: z.enum(READINESS_ITEM_STATES),
    /** What was found, in words (never only a colour). */
    detail: z.string(),
    /** When the fact this item rests on was last established (null when nothing was read yet). */
    asOf: z.string().nullable(),
    /** Seconds from asOf to the time of the check (null with asOf). */
    ageSeconds: z.number().int().nullable(),
    /** The one thing that fixes it: words for a person and the contract method that does it. */
    action: z.strictObject({ label: z.string(), method: z.string().nullable() }).nullable(),
  }),
);
export type ReadinessItem = z.infer<typeof readinessItem>;

export const povReadiness = lazySchema(() =>
  z.strictObject({
    povId: z.string(),
    overall: readinessLevel,
    /**
     * One line: the first not-ready (else attention) item's detail, or "Ready for the customer."
     * ("Ready to rehearse." on a local POV), naming what is not configured after it.
     */
    summary: z.string(),
    checkedAt: z.string(),
    items: z.array(readinessItem),
  }),
);
export type PovReadiness = z.infer<typeof povReadiness>;
