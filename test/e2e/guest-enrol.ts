import type { ControlPlaneDouble } from '../support/control-plane-double';
import { BEGIN_MARKER, END_MARKER } from '../../main/services/control-node/markers';
import type { Emulator } from '../skytap-emulator/emulator';

/**
 * Plays the guests of the emulated environments: once a VM's user_data carries a whole bootstrap
 * (both markers), its agent enrols with the control-plane double. Returns the timer; clear it.
 */
export function enrolGuestsWhenBootstrapped(emu: Emulator, cp: ControlPlaneDouble): NodeJS.Timeout {
  return setInterval(() => {
    for (const env of emu.state.environments.values()) {
      for (const vm of env.vms) {
        if (!vm.userData.includes(BEGIN_MARKER) || !vm.userData.includes(END_MARKER)) continue;
        const agent = /AGENT_ID='([^']+)'/.exec(vm.userData)?.[1];
        if (agent && cp.agents.get(agent)?.state === 'pending') cp.enrol(agent, 'ed25519');
      }
    }
  }, 50);
}
