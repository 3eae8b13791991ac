import { useEffect, useMemo, useState } from 'react';
import { api, errorText } from '../../api';
import { LOCAL_NO_AUTO_DELETE, platformChoices, type LabPlatformId } from '../../state/lab';
import { useVms } from '../../state/vms';
import { fromLocalInput, toLocalInput } from '../share/datetime';
import { ModalDialog } from '../modal-dialog';
import { TimeZoneInput } from './customer-tz';
import { PlatformPicker } from './platform-picker';
import { TemplatePicker, type TemplateRow } from './template-picker';
import { bothZones } from './time';
import { ErrorAlert } from '../error-alert';

export interface CreatePovInput {
  platform: LabPlatformId;
  templateId: string;
  name: string;
  autoDeleteAt?: string;
  customerTz?: string;
}

/**
 * Create POV: the lab platform (Skytap, or the vm-manager the app is connected to: this laptop's
 * or a remote one), a searchable list of that platform's templates (labTemplates.list), and a name.
 * What the platform cannot do is not offered (a local POV has no auto-delete date) and says why.
 */
export function CreatePovDialog({
  onClose,
  onCreate,
  initialPlatform = 'skytap',
}: {
  onClose(): void;
  onCreate(input: CreatePovInput): Promise<void>;
  initialPlatform?: LabPlatformId;
}) {
  const [platform, setPlatform] = useState<LabPlatformId>(initialPlatform);
  const connection = useVms((s) => s.connection);
  const [templates, setTemplates] = useState<{ platform: LabPlatformId; rows: TemplateRow[] } | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Auto-delete (Skytap only): the default from the setting (30 days unless changed), editable here.
  const [deleteAt, setDeleteAt] = useState('');
  // The customer's zone (optional): every time of the POV is shown in it beside the SE's.
  const [customerTz, setCustomerTz] = useState('');
  useEffect(() => {
    api
      .call('notify.getSettings', {})
      .then((s) => setDeleteAt((v) => v || toLocalInput(new Date(Date.now() + s.autoDeleteDays * 86_400_000).toISOString())))
      .catch(() => undefined);
  }, []);
  // which vm-manager `local` means here: this laptop's, or a remote one (the POVs page has read it)
  useEffect(() => {
    if (!connection) void useVms.getState().loadConnection();
  }, [connection]);

  useEffect(() => {
    let live = true;
    setTemplates(null);
    setLoadError(null);
    setPicked(null);
    api
      .call('labTemplates.list', { platform })
      .then((r) => live && setTemplates({ platform, rows: r.templates }))
      .catch((e) => live && setLoadError(errorText(e)));
    return () => {
      live = false;
    };
  }, [platform]);

  const choices = useMemo(() => platformChoices(connection), [connection]);
  const rows = templates?.platform === platform ? templates.rows : null;
  const chosen = rows?.find((t) => t.id === picked) ?? null;
  const canCreate = !!chosen && name.trim().length > 0 && !busy;
  const local = platform === 'local';
  const at = local ? null : fromLocalInput(deleteAt);

  async function submit() {
    if (!chosen) return;
    setBusy(true);
    setError(null);
    try {
      await onCreate({
        platform,
        templateId: chosen.id,
        name: name.trim(),
        ...(at ? { autoDeleteAt: at } : {}),
        ...(customerTz.trim() ? { customerTz: customerTz.trim() } : {}),
      });
      onClose();
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  }

  return (
    <ModalDialog onCancel={onClose} className="pov-dialog pov-dialog-create" aria-label="Create POV">
      <h3>Create POV</h3>
      <PlatformPicker choices={choices} value={platform} onChange={setPlatform} />
      <TemplatePicker platform={platform} templates={rows} loadError={loadError} picked={picked} onPick={setPicked} />
      <label className="form">
        <span>POV name</span>
        <input
          aria-label="POV name"
          value={name}
          maxLength={200}
          onChange={(e) => setName(e.target.value)}
          placeholder="e.g. Acme Corp evaluation"
        />
      </label>
      {local ? (
        <p className="small muted" data-testid="no-auto-delete">
          {LOCAL_NO_AUTO_DELETE}
        </p>
      ) : (
        <label className="form">
          <span>Auto-delete (Skytap deletes the environment then; warnings come before)</span>
          <input type="datetime-local" aria-label="Auto-delete" value={deleteAt} onChange={(e) => setDeleteAt(e.target.value)} />
        </label>
      )}
      <label className="form">
        <span>Customer time zone (optional; times are shown in it beside yours)</span>
        <TimeZoneInput label="Customer time zone" value={customerTz} onChange={setCustomerTz} />
      </label>
      {at && customerTz.trim() && (
        <p className="small muted" data-testid="create-times">
          Deletes {bothZones(at, customerTz.trim())}
        </p>
      )}
      <ErrorAlert error={error} />
      <div className="row" style={{ justifyContent: 'flex-end' }}>
        <button onClick={onClose}>Cancel</button>
        <button className="primary" disabled={!canCreate} onClick={() => void submit()}>
          {busy ? 'Creating…' : 'Create'}
        </button>
      </div>
    </ModalDialog>
  );
}
