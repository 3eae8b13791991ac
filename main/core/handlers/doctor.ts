import type { doctorMethods } from '../../../shared/contract/doctor';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

/** doctor.run and doctor.bundle: the read-only first-contact probes and the support bundle. */
export function doctorHandlers({ doctor }: Pick<Services, 'doctor'>): DomainHandlers<typeof doctorMethods> {
  return {
    'doctor.run': () => doctor.run(),
    'doctor.bundle': () => doctor.bundle(),
  };
}
