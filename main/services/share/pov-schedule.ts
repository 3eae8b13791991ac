import { nextStep, type Ladder } from '../notify/ladder';
import type { NotificationService } from '../notify/service';
import type { PovAutoDelete } from '../pov/types';
import type { AutoDelete } from './auto-delete';

/**
 * Auto-delete as the POVs see it: the Skytap schedule (AutoDelete) and the warning ladder that
 * counts down to it. Arming or moving a schedule runs the ladder at once, so a POV created or moved
 * close to its deletion warns now, not at the next minute's pass.
 */
export function povSchedule(d: { autoDelete: AutoDelete; ladder: Ladder; notify: NotificationService; now: () => Date }): PovAutoDelete {
  return {
    at: (asked) => (asked === undefined ? d.autoDelete.defaultAt() : d.autoDelete.check(asked)).toISOString(),
    arm: async (povId) => {
      await d.autoDelete.arm(povId);
      d.ladder.tick();
    },
    move: async (povId, at) => {
      await d.autoDelete.set(povId, at);
      d.ladder.tick();
    },
    sweep: async (envs, ctx) => {
      const r = await d.autoDelete.sweep(envs);
      if (r.notArmed.length) ctx.log(`auto-delete not armed for ${r.notArmed.length} POV(s)`, 'warn');
      if (r.portalsGone) ctx.log(`${r.portalsGone} share link(s) no longer in Skytap: marked gone`);
    },
    ladderView: (povId, at) => ({
      nextWarning: nextStep(d.now(), new Date(at), d.notify.settings().ladderHours),
      lastWarning: d.ladder.lastFired(povId, at),
    }),
  };
}
