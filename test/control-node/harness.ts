import type { ControlPlaneDouble } from '../support/control-plane-double';
import { BEGIN_MARKER, END_MARKER } from '../../main/services/control-node/markers';
import type { Db } from '../../main/services/store/db';
import type { Emulator } from '../skytap-emulator/emulator';
import { clientFor } from '../pov/helpers';

/** What the guest loop reads: the app's database and the emulator. */
type Seen = { db: Db; emu: Emulator };

/**
 * The guest side, as the template runner plus the agent would do it: reads each VM's user_data
 * from the emulator and enrols the agent the bootstrap names. Returns a stop function.
 */
export function guest(w: Seen, cp: ControlPlaneDouble, povId: string, seen: { payloads: string[] } = { payloads: [] }, enrol = true) {
  let on = true;
  const client = clientFor(w.emu.url);
  void (async () => {
    while (on) {
      const row = w.db.prepare('SELECT env_id FROM povs WHERE id = ?').get(povId) as { env_id: string | null } | undefined;
      const vms = w.db.prepare('SELECT vm_id FROM pov_vms WHERE pov_id = ?').all(povId) as { vm_id: string }[];
      for (const vm of row?.env_id ? vms : []) {
        const ud = await client.getVmUserData(row!.env_id!, vm.vm_id).catch(() => '');
        if (ud.includes(BEGIN_MARKER) && ud.includes(END_MARKER)) {
          const agent = /AGENT_ID='([^']+)'/.exec(ud)?.[1];
          if (agent && cp.agents.get(agent)?.state === 'pending' && !seen.payloads.includes(ud)) {
            seen.payloads.push(ud);
            if (enrol) cp.enrol(agent, 'ed25519');
          }
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return () => {
    on = false;
  };
}

export function jobLog(w: Pick<Seen, 'db'>, jobId: string): string[] {
  return (w.db.prepare('SELECT message FROM job_log WHERE job_id = ? ORDER BY seq').all(jobId) as { message: string }[]).map(
    (r) => r.message,
  );
}
