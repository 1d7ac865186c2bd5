/**
 * Trust anchors and identity resolve: the published registry, approved issuers, and identifiers made canonical
 * (decisions §4, §5).
 */
export { findApprovedIssuer, isListedIssuer } from "./approved_issuers.ts";
export {
  IdentifierList,
  identifierListRefusal,
  type IdentityRecord,
  MAX_IDENTIFIER_LENGTH,
  MAX_IDENTIFIERS,
  resolveIdentities,
  resolveIdentity,
} from "./identity.ts";
export {
  activeChainAnchors,
  caip2,
  subsidizedSchemaMap,
  TrustAnchorsModel,
  validateTrustAnchors,
  browserOrigin,
} from "./trust_anchors.ts";
export { type ChainPolicy, policyAllowlists, type TrustPolicy, trustPolicyOf } from "./trust_policy.ts";
