export { startEmulator, USER_DATA_MAX, type Emulator, type EmulatorOptions, type RequestRecord } from './emulator';
export { FaultScript, BUSY_MESSAGE, type Fault, type FaultKind } from './faults';
export { EmulatorState, DEFAULT_TIMING, type Timing, type VmSeed, type TemplateSeed } from './state';
export { SEEDS, applySeed } from './seed';
export { SharingState, PORTALS_DISABLED_MESSAGE, type EmuPortal, type EmuSchedule } from './sharing';
