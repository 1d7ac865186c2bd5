/** Routes of accounts, subscriptions, subjects, subject ownership and premium reads. */
export { accountRoutes, type AccountRoutesDeps, subscriptionReader } from "./accounts.ts";
export { premiumRpcRoutes, type PremiumRpcRoutesDeps } from "./premium_rpc.ts";
export { subjectOwnershipRoutes } from "./subject_ownership.ts";
export { subjectRoutes, type SubjectRoutesDeps } from "./subjects.ts";
export { subscriptionRoutes, type SubscriptionRoutesDeps } from "./subscriptions.ts";
