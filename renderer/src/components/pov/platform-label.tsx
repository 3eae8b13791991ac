import type { VmConnection } from '../../../../shared/contract/vm';
import { platformLabel } from '../../state/lab';

/** The small label that says where a POV's VMs run (Skytap, this laptop, or a remote vm-manager). */
export function PlatformLabel({ platform, connection }: { platform: string; connection: VmConnection | null }) {
  const text = platformLabel(platform, connection);
  return (
    <span className={`badge platform-label ${platform}`} data-testid="pov-platform" title={`Lab platform: ${text}`}>
      {text}
    </span>
  );
}
