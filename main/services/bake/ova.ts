/**
 * Export for Skytap's import: an OVF 1.0 descriptor, a stream-optimized (version 3) VMDK from
 * qemu-img, a manifest with SHA256 lines, and for an OVA the three in one USTAR tar in the order
 * .ovf, .mf, .vmdk (OVF 1.0 §5.3: the descriptor first, the manifest next). Skytap's limits
 * (OVA/OVF with VMDK, under 4 TB, one VM per OVF) are checked before anything is written.
 */
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { run, sha256File } from './tools';

/** Skytap: imported VMs under 4 TB. */
export const SKYTAP_MAX_BYTES = 4 * 1000 ** 4;
/** A USTAR member's size field holds 11 octal digits: just under 8 GiB. */
export const USTAR_MAX_FILE = 8 * 1024 ** 3 - 1;
/** VMware hardware version declared in the VMDK and the OVF (ESXi 6.7 / Skytap's current hosts). */
export const HW_VERSION = 14;

export interface OvfInput {
  name: string;
  vmdk: string;
  vmdkBytes: number;
  capacityBytes: number;
  cpus: number;
  memoryMib: number;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The descriptor: one VirtualSystem, one disk on an LSI Logic controller, one NIC on the automatic network. */
export function ovfDescriptor(o: OvfInput): string {
  const n = xml(o.name);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>
<Envelope vmw:buildId="povdesk" xmlns="http://schemas.dmtf.org/ovf/envelope/1" ` +
    `xmlns:cim="http://schemas.dmtf.org/wbem/wscim/1/common" xmlns:ovf="http://schemas.dmtf.org/ovf/envelope/1" ` +
    `xmlns:rasd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_ResourceAllocationSettingData" ` +
    `xmlns:vmw="http://www.vmware.com/schema/ovf" ` +
    `xmlns:vssd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_VirtualSystemSettingData" ` +
    `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <References>
    <File ovf:href="${xml(o.vmdk)}" ovf:id="file1" ovf:size="${o.vmdkBytes}"/>
  </References>
  <DiskSection>
    <Info>Virtual disk information</Info>
    <Disk ovf:capacity="${o.capacityBytes}" ovf:capacityAllocationUnits="byte" ovf:diskId="vmdisk1" ovf:fileRef="file1" ` +
    `ovf:format="http://www.vmware.com/interfaces/specifications/vmdk.html#streamOptimized"/>
  </DiskSection>
  <NetworkSection>
    <Info>The list of logical networks</Info>
    <Network ovf:name="automatic">
      <Description>An automatic network: Skytap's metadata service answers only there</Description>
    </Network>
  </NetworkSection>
  <VirtualSystem ovf:id="${n}">
    <Info>A POV Desk control-node template</Info>
    <Name>${n}</Name>
    <OperatingSystemSection ovf:id="96" vmw:osType="debian11_64Guest">
      <Info>The kind of installed guest operating system</Info>
      <Description>Debian GNU/Linux (64-bit)</Description>
    </OperatingSystemSection>
    <VirtualHardwareSection>
      <Info>Virtual hardware requirements</Info>
      <System>
        <vssd:ElementName>Virtual Hardware Family</vssd:ElementName>
        <vssd:InstanceID>0</vssd:InstanceID>
        <vssd:VirtualSystemIdentifier>${n}</vssd:VirtualSystemIdentifier>
        <vssd:VirtualSystemType>vmx-${HW_VERSION}</vssd:VirtualSystemType>
      </System>
      <Item>
        <rasd:AllocationUnits>hertz * 10^6</rasd:AllocationUnits>
        <rasd:Description>Number of Virtual CPUs</rasd:Description>
        <rasd:ElementName>${o.cpus} virtual CPU(s)</rasd:ElementName>
        <rasd:InstanceID>1</rasd:InstanceID>
        <rasd:ResourceType>3</rasd:ResourceType>
        <rasd:VirtualQuantity>${o.cpus}</rasd:VirtualQuantity>
      </Item>
      <Item>
        <rasd:AllocationUnits>byte * 2^20</rasd:AllocationUnits>
        <rasd:Description>Memory Size</rasd:Description>
        <rasd:ElementName>${o.memoryMib}MB of memory</rasd:ElementName>
        <rasd:InstanceID>2</rasd:InstanceID>
        <rasd:ResourceType>4</rasd:ResourceType>
        <rasd:VirtualQuantity>${o.memoryMib}</rasd:VirtualQuantity>
      </Item>
      <Item>
        <rasd:Address>0</rasd:Address>
        <rasd:Description>SCSI Controller</rasd:Description>
        <rasd:ElementName>SCSI controller 0</rasd:ElementName>
        <rasd:InstanceID>3</rasd:InstanceID>
        <rasd:ResourceSubType>lsilogic</rasd:ResourceSubType>
        <rasd:ResourceType>6</rasd:ResourceType>
      </Item>
      <Item>
        <rasd:AddressOnParent>0</rasd:AddressOnParent>
        <rasd:ElementName>Hard disk 1</rasd:ElementName>
        <rasd:HostResource>ovf:/disk/vmdisk1</rasd:HostResource>
        <rasd:InstanceID>4</rasd:InstanceID>
        <rasd:Parent>3</rasd:Parent>
        <rasd:ResourceType>17</rasd:ResourceType>
      </Item>
      <Item>
        <rasd:AddressOnParent>7</rasd:AddressOnParent>
        <rasd:AutomaticAllocation>true</rasd:AutomaticAllocation>
        <rasd:Connection>automatic</rasd:Connection>
        <rasd:Description>VmxNet3 ethernet adapter on "automatic"</rasd:Description>
        <rasd:ElementName>Network adapter 1</rasd:ElementName>
        <rasd:InstanceID>5</rasd:InstanceID>
        <rasd:ResourceSubType>VmxNet3</rasd:ResourceSubType>
        <rasd:ResourceType>10</rasd:ResourceType>
      </Item>
    </VirtualHardwareSection>
  </VirtualSystem>
</Envelope>
`
  );
}

/** One line per file, as OVF 1.0 with SHA-256 (hardware version ≥ 10) wants it: `SHA256(file)= hex`. */
export function manifestLines(entries: { file: string; sha256: string }[]): string {
  return entries.map((e) => `SHA256(${e.file})= ${e.sha256}\n`).join('');
}

/** Skytap: an import job's uncompressed size under 4 TB; one VM per OVF (ours always has one). */
export function checkSkytapLimits(capacityBytes: number): void {
  if (capacityBytes >= SKYTAP_MAX_BYTES) {
    throw new AppError('invalid_request', `the disk is ${capacityBytes} bytes; Skytap imports VMs under 4 TB: shrink the image first`);
  }
}

export interface ExportedFile {
  path: string;
  bytes: number;
  sha256: string;
}

/** Writes the export into `dir` (which the caller made and removes on failure). */
export async function writeExport(o: {
  name: string;
  disk: string;
  capacityBytes: number;
  format: 'ova' | 'ovf' | 'vmdk';
  dir: string;
  signal?: AbortSignal;
  log?: (l: string) => void;
}): Promise<ExportedFile[]> {
  checkSkytapLimits(o.capacityBytes);
  const vmdk = `${o.name}-disk1.vmdk`;
  await run(
    'qemu-img',
    ['convert', '-O', 'vmdk', '-o', `subformat=streamOptimized,adapter_type=lsilogic,hwversion=${HW_VERSION}`, o.disk, join(o.dir, vmdk)],
    {
      signal: o.signal,
      what: 'qemu-img convert (stream-optimized VMDK)',
    },
  );
  const vmdkBytes = statSync(join(o.dir, vmdk)).size;
  const vmdkSha = await sha256File(join(o.dir, vmdk));
  if (o.format === 'vmdk') return [{ path: join(o.dir, vmdk), bytes: vmdkBytes, sha256: vmdkSha }];
  if (o.format === 'ova' && vmdkBytes > USTAR_MAX_FILE) {
    throw new AppError(
      'invalid_request',
      `the VMDK is ${vmdkBytes} bytes, over the 8 GiB a USTAR OVA member can hold: export as "ovf" instead`,
    );
  }
  const ovf = `${o.name}.ovf`;
  const mf = `${o.name}.mf`;
  writeFileSync(
    join(o.dir, ovf),
    ovfDescriptor({ name: o.name, vmdk, vmdkBytes, capacityBytes: o.capacityBytes, cpus: 2, memoryMib: 4096 }),
  );
  const ovfSha = await sha256File(join(o.dir, ovf));
  writeFileSync(
    join(o.dir, mf),
    manifestLines([
      { file: ovf, sha256: ovfSha },
      { file: vmdk, sha256: vmdkSha },
    ]),
  );
  const files = [ovf, mf, vmdk];
  if (o.format === 'ovf') {
    // The VMDK (GiBs) and the descriptor were hashed above for the manifest: only the manifest is new.
    const known = new Map([
      [vmdk, vmdkSha],
      [ovf, ovfSha],
    ]);
    return Promise.all(
      files.map(async (f) => ({
        path: join(o.dir, f),
        bytes: statSync(join(o.dir, f)).size,
        sha256: known.get(f) ?? (await sha256File(join(o.dir, f))),
      })),
    );
  }
  const ova = `${o.name}.ova`;
  await run('tar', ['--format=ustar', '--owner=0', '--group=0', '--numeric-owner', '-cf', ova, ...files], {
    cwd: o.dir,
    signal: o.signal,
    what: 'tar (OVA)',
  });
  for (const f of files) rmSync(join(o.dir, f));
  return [{ path: join(o.dir, ova), bytes: statSync(join(o.dir, ova)).size, sha256: await sha256File(join(o.dir, ova)) }];
}
