/**
 * Every published operation, gathered from the declarations each capability keeps beside its routes (its models,
 * who may call it, its cache policy and its answers). `/openapi.json` and the cache policy (http/http_cache.ts) are
 * generated from this one list; its order is the order of `/openapi.json`.
 */
import type { RouteDoc } from "./models.ts";
import { ACCOUNT_DOCS, PREMIUM_RPC_DOCS, SUBJECT_DOCS, SUBJECT_OWNERSHIP_DOCS, SUBSCRIPTION_DOCS } from "./routes/accounts/mod.ts";
import { ARTIFACT_TRUST_DOCS } from "./routes/artifact_trust.ts";
import { ATTESTATION_DOCS } from "./routes/attestation_list.ts";
import { CONSOLE_DOCS } from "./routes/console.ts";
import { CONTROLLER_DOCS } from "./routes/controller.ts";
import { CONTROLLER_AUTHORIZATION_DOCS } from "./routes/controller_authorization.ts";
import { EAS_DOCS, PAID_RELAY_DOCS, PRIVATE_RELAY_DOCS } from "./routes/delegation/mod.ts";
import { DID_DOCUMENT_DOCS } from "./routes/did_document.ts";
import { HEALTH_DOCS, METRICS_DOCS } from "./routes/health.ts";
import { IDENTITY_DOCS } from "./routes/identity.ts";
import { INTERACTION_DOCS } from "./routes/interactions.ts";
import { KEY_STATUS_DOCS, SIGNING_KEY_DOCS } from "./routes/keys/mod.ts";
import { MCP_DOCS } from "./routes/mcp/mod.ts";
import { API_CLIENT_DOCS, OAUTH_DOCS } from "./routes/oauth/mod.ts";
import { LOGOUT_DOCS, PAID_WITNESS_DOCS, SESSION_ME_DOCS, SIGN_IN_DOCS, WITNESS_DOCS } from "./routes/session_declarations.ts";
import { SUBMISSION_DOCS } from "./routes/submissions.ts";
import { TRUST_ANCHOR_DOCS, TRUST_POLICY_DOCS } from "./routes/trust_anchors.ts";
import { WEBHOOK_DOCS } from "./routes/webhooks.ts";
import { WIDGET_DOCS } from "./routes/widgets.ts";

/** Every public operation with its models; `/openapi.json` is generated from this list. */
export const ROUTE_DOCS: readonly RouteDoc[] = [
  ...EAS_DOCS,
  ...TRUST_ANCHOR_DOCS,
  ...INTERACTION_DOCS,
  ...TRUST_POLICY_DOCS,
  ...IDENTITY_DOCS,
  ...CONTROLLER_DOCS,
  ...ARTIFACT_TRUST_DOCS,
  ...ATTESTATION_DOCS,
  ...SIGN_IN_DOCS,
  ...ACCOUNT_DOCS,
  ...SUBSCRIPTION_DOCS,
  ...SESSION_ME_DOCS,
  ...PREMIUM_RPC_DOCS,
  ...LOGOUT_DOCS,
  ...SUBJECT_OWNERSHIP_DOCS,
  ...WITNESS_DOCS,
  ...PRIVATE_RELAY_DOCS,
  ...SUBMISSION_DOCS,
  ...SUBJECT_DOCS,
  ...SIGNING_KEY_DOCS,
  ...KEY_STATUS_DOCS,
  ...CONTROLLER_AUTHORIZATION_DOCS,
  ...PAID_WITNESS_DOCS,
  ...PAID_RELAY_DOCS,
  ...OAUTH_DOCS,
  ...API_CLIENT_DOCS,
  ...METRICS_DOCS,
  ...DID_DOCUMENT_DOCS,
  ...MCP_DOCS,
  ...HEALTH_DOCS,
  ...CONSOLE_DOCS,
  ...WIDGET_DOCS,
  ...WEBHOOK_DOCS,
];
