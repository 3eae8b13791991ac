/**
 * The guest half of attestation in a baked template: the vm-manager's own guest-quote.sh (fetched
 * from it, GET /povdesk/attest-agent) and a unit that quotes this boot, with the firmware's event
 * log, before the runner asks for its user-data. Under the local vm-manager the user-data is
 * released only after that quote verified against the image's reference measurements; elsewhere
 * (Skytap: no TPM, or no /attest on its metadata service) the unit fails and holds nothing back.
 */
import { UNIT_NAME } from '../control-node/runner';

export const ATTEST_SCRIPT = '/usr/local/lib/povdesk/guest-quote.sh';
export const ATTEST_UNIT = 'povdesk-attest.service';

export function attestUnit(pcrs: number[]): string {
  return `[Unit]
Description=POV Desk: attest this boot (a TPM quote and the firmware's event log) before the runner fetches its user-data
Wants=network-online.target
After=network-online.target
Before=${UNIT_NAME}
ConditionPathExists=/dev/tpmrm0
# a metadata service that is slow to answer is tried again; one without /attest (Skytap) stops it
StartLimitIntervalSec=300
StartLimitBurst=10

[Service]
Type=oneshot
RemainAfterExit=yes
Environment=TPM2TOOLS_TCTI=device:/dev/tpmrm0 ATTEST_PCRS=${pcrs.join(',')} ATTEST_STATE_DIR=/run/povdesk-attest
ExecStart=/bin/sh ${ATTEST_SCRIPT} initrd 169.254.169.254 80
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
`;
}
