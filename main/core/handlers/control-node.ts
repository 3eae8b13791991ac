import type { controlNodeMethods } from '../../../shared/contract/control-node';
import type { ControlNodeConfig } from '../../services/control-node/config';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';
import type { povMethods } from '../../../shared/contract/pov';
import type { bakeMethods } from '../../../shared/contract/bake';

export function controlNodeHandlers({
  controlNode: cn,
}: Pick<Services, 'controlNode'>): DomainHandlers<typeof controlNodeMethods> &
  Pick<DomainHandlers<typeof povMethods>, 'pov.setControlNodeName' | 'pov.setRoleHosts' | 'pov.installControlNode'> &
  Pick<DomainHandlers<typeof bakeMethods>, 'bake.runnerScript'> {
  return {
    'bake.runnerScript': async () => cn.runnerScript(),
    'controlNode.previewBootstrap': async ({ povId }) => cn.previewBootstrap(povId),
    'controlNode.getSettings': async () => cn.getSettings(),
    'controlNode.saveSettings': async ({ token, ...rest }) => {
      const patch = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<ControlNodeConfig>;
      return cn.saveSettings(patch, token);
    },
    'pov.setControlNodeName': async ({ id, name }) => ({ controlNode: cn.setName(id, name) }),
    'pov.setRoleHosts': async ({ id, entitleHost, brokerHost }) => ({ controlNode: cn.setRoleHosts(id, { entitleHost, brokerHost }) }),
    'pov.installControlNode': async ({ id }) => ({ jobId: cn.install(id) }),
  };
}
