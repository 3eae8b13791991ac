/**
 * Attestation for the local vm-manager: the guest runs guest-quote.sh (beside this file), the
 * manager hands out nonces from a NonceStore and checks each quote with verifyQuote against the
 * image's policy.json. See docs/attestation.md.
 */
import { vmAsset } from '../assets';

export { NonceStore, NONCE_TTL_MS, MAX_OUTSTANDING_PER_VM, type NonceCheck } from './nonce';
export {
  imagePolicySchema,
  newPolicy,
  loadPolicy,
  savePolicy,
  recordGolden,
  recordGoldenForSize,
  goldenForSize,
  learnedSizes,
  hasGolden,
  sizeKey,
  type VmSize,
  goldenPcrs,
  expectedPcr11,
  expectedPcr13,
  firmwareDigest,
  PHASE_PATH,
  DEFAULT_STAGE_PCRS,
  type ImagePolicy,
  type Stage,
} from './policy';
export { verifyQuote, quoteBodySchema, type QuoteBody, type QuoteVerdict, type VerifyRequest, type FailedCheck } from './verify';
export { parseAttest, parsePublic, parseSignature, TpmParseError } from './tpm';
export {
  referencesSchema,
  firmwareReferences,
  kernelBootReferences,
  expectationsFor,
  type References,
  type Expectations,
} from './references';
export { grubReferences, Unpredictable } from './grub';
export { parseEventLog, replay, eventTypeName, EventLogError } from './eventlog';
export { checkEvents, ALLOWED, type EventMismatch } from './events';

/** Absolute path of the guest script, for the image builder to copy into the initramfs. */
export const GUEST_QUOTE_SCRIPT = vmAsset('attest/guest-quote.sh');
