/**
 * Test support, not product code: the contract suites every storage adapter must pass, one file per port, run
 * against SQLite and PostgreSQL by adapters/storage_test.ts (docs/testing.md).
 */
export { storageContract } from "./storage_contract.ts";
export { deploymentLimitsContract } from "./deployment_limits_contract.ts";
export { oauthStorageContract } from "./oauth_contract.ts";
export { webhookStorageContract } from "./webhooks_contract.ts";
export { deploymentSecretsContract } from "./deployment_secrets_contract.ts";
