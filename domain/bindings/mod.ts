/**
 * Who may still bind a key (the binding authority rule): a controller cut off by a binding's revocation or expiry
 * cannot bind itself or another key again. Key status, controller authorization, artifact trust and the x402
 * verifier all apply it, with one rule on who may bind a key and who is never cut off (`countingBindings`).
 */
export { type AuthorityBinding, type BindingAuthority, type BindingAuthorityRules, createBindingAuthority, earliestEnd } from "./binding_authority.ts";
export {
  bindingCounts,
  bindingEnd,
  type BindingEvidence,
  bindingNames,
  type BindingRulesInput,
  countingBindings,
  endpointsCouldChange,
  newestFirst,
  type WitnessEvidence,
  witnessStood,
} from "./binding_rules.ts";
