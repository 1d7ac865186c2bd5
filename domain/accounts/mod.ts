/**
 * Accounts and subjects: plans and their quotas, the views of an account, subjects and their ownership proofs,
 * premium reads (decisions §12).
 */
export {
  bootstrapSubject,
  DEFAULT_CLIENT_ID,
  type PrimarySubjectView,
  readDisplayName,
  sessionId,
  subscriptionView,
  walletDid,
} from "./account_views.ts";
export { isPlan, planAllowsSchema, type PlanPolicy, PLANS, quotaYear } from "./plans.ts";
export { createPremiumRpc, MAX_BATCH, PREMIUM_METHODS, type PremiumRpc, requestShapeFault } from "./premium_rpc.ts";
export { createSubjectOwnership, type VerifySubjectOwnership } from "./subject_ownership.ts";
export { createSubjects, DEFAULT_MAX_SUBJECTS_PER_ACCOUNT, type Subjects } from "./subjects.ts";
