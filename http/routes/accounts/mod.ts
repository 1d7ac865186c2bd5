/** Routes of accounts, subscriptions, subjects, subject ownership and premium reads. */
export { ACCOUNT_DOCS, accountRoutes, type AccountRoutesDeps, subscriptionReader } from "./accounts.ts";
export { PREMIUM_RPC_DOCS, premiumRpcRoutes, type PremiumRpcRoutesDeps } from "./premium_rpc.ts";
export { SUBJECT_OWNERSHIP_DOCS, type SubjectOwnershipLimit, subjectOwnershipRoutes } from "./subject_ownership.ts";
export { SUBJECT_DOCS, subjectRoutes, type SubjectRoutesDeps } from "./subjects.ts";
export { SUBSCRIPTION_DOCS, subscriptionRoutes, type SubscriptionRoutesDeps } from "./subscriptions.ts";
