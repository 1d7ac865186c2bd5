/**
 * Service signing keys and key trust (decisions §17): the account's key records, and the status and trust level of
 * a key for a subject, computed from the attestation index and the subject's endpoint evidence. `createKeyStatus`
 * is the use case other capabilities call ("was this key authorised for this subject at `issuedAt`").
 */
export {
  bindingCounts,
  bindingNames,
  bindingEnd,
  type BindingEvidence,
  countingBindings,
  endpointEvidenceOf,
  endpointsCouldChange,
  evaluateKeyTrust,
  type KeyStatusValue,
  type KeyTrust,
  type KeyTrustInput,
  nextStep,
  type TrustLevel,
  type WitnessEvidence,
} from "./key_rules.ts";
export {
  createKeyStatus,
  createKeyTrust,
  KEY_DID_METHODS,
  type KeyStatus,
  type KeyStatusCode,
  type KeyStatusDeps,
  type KeyStatusRecord,
  type KeyTrustMany,
  MAX_DID_LENGTH,
  readAt,
  readKeyDid,
  type ReadSubjectEvidence,
  readSubjectDid,
  type SubjectEvidence,
} from "./key_status.ts";
export {
  createSigningKeys,
  DEFAULT_MAX_KEYS_PER_ACCOUNT,
  KEY_TYPES,
  type KeySubjectTrust,
  type ListedSigningKey,
  MAX_KEY_DISPLAY_NAME,
  MAX_NOTES,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  readSigningKeyBody,
  type SigningKeyCode,
  type SigningKeys,
  type SigningKeysDeps,
  type SigningKeyView,
  signingKeyView,
} from "./signing_keys.ts";
