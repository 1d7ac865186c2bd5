import { Type as t } from "@sinclair/typebox";
import {
  ArtifactTrustQuery,
  ArtifactTrustRecordModel,
  ControllerConfirmModel,
  ControllerConfirmQuery,
  ControllerEndpointConfirmModel,
  DelegatedAttestBody,
  DelegatedAttestSuccessModel,
  EasErrorModel,
  ErrorModel,
  HealthModel,
  IdentityResolveBody,
  IdentityResolveResponse,
  NonceQuery,
  NonceRecordModel,
  ReadyModel,
  type RouteDoc,
  TrustAnchorsModel,
} from "./models.ts";

const err = (description: string) => ({ description, schema: ErrorModel });
const easErr = (description: string) => ({ description, schema: EasErrorModel });

/** Every public operation with its models; `/openapi.json` is generated from this list. */
export const ROUTE_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/eas/nonce", "/v1/nonce"],
    summary: "The attester's current EAS nonce",
    query: NonceQuery,
    responses: {
      200: { description: "Nonce record", schema: NonceRecordModel },
      400: easErr("attester missing or invalid (INVALID_INPUT)"),
      500: easErr("RPC failure (RPC_ERROR)"),
    },
  },
  {
    method: "post",
    paths: ["/api/eas/delegated-attest", "/v1/delegated-attest"],
    summary: "Verify an EIP-712 Attest signature and submit it through attestByDelegation, paying gas",
    body: DelegatedAttestBody,
    responses: {
      200: { description: "Mined attestation", schema: DelegatedAttestSuccessModel },
      400: easErr("INVALID_JSON, INVALID_INPUT, SIGNATURE_EXPIRED, INVALID_SIGNATURE, ATTESTER_MISMATCH"),
      403: easErr("SCHEMA_NOT_SUBSIDIZED"),
      409: easErr("DUPLICATE"),
      500: easErr("NO_DELEGATE_KEY, RPC_ERROR, SUBMISSION_FAILED"),
      501: easErr("MAINNET_NOT_SUPPORTED"),
    },
  },
  {
    method: "get",
    paths: ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors"],
    summary: "Registry addresses, schema UIDs and approved issuers",
    responses: { 200: { description: "Trust anchors record", schema: TrustAnchorsModel }, 405: err("METHOD_NOT_ALLOWED") },
  },
  {
    method: "post",
    paths: ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"],
    summary: "Canonical identifiers and display labels (display only, not for authorization)",
    body: IdentityResolveBody,
    responses: {
      200: { description: "One record per input, in order", schema: IdentityResolveResponse },
      400: err("INVALID_JSON, INVALID_INPUT"),
    },
  },
  {
    method: "get",
    paths: ["/v1/controller-endpoint-confirm", "/api/public/controller-endpoint-confirm"],
    summary: "Controller keys a did:web publishes through DNS TXT and did.json (current, mutable evidence)",
    query: t.Pick(ControllerConfirmQuery, ["subjectDid"]),
    responses: {
      200: { description: "Endpoint evidence", schema: ControllerEndpointConfirmModel },
      400: err("INVALID_INPUT (subjectDid missing), INVALID_DID"),
    },
  },
  {
    method: "get",
    paths: ["/v1/controller-confirm", "/api/public/controller-confirm"],
    summary: "Endpoint evidence plus the connected wallet and the approved-issuer registry",
    query: ControllerConfirmQuery,
    responses: {
      200: { description: "Evidence with approvedIssuer", schema: ControllerConfirmModel },
      400: err("INVALID_INPUT, INVALID_DID"),
    },
  },
  {
    method: "get",
    paths: ["/v1/artifact-trust", "/api/public/artifact-trust"],
    summary: "Every verified claim about a did:artifact: responsibility claims, security assessments, certifications, linked identifiers",
    query: ArtifactTrustQuery,
    responses: {
      200: { description: "Artifact trust record (four empty groups when there is no qualifying evidence)", schema: ArtifactTrustRecordModel },
      400: err("INVALID_DID (missing, malformed or not a did:artifact), UNSUPPORTED_CHAIN"),
      500: err("INTERNAL_ERROR"),
      502: err("NETWORK_ERROR: the chain, the schema registry or a required verification lookup failed"),
    },
  },
  {
    method: "get",
    paths: ["/healthz"],
    summary: "The process is alive",
    responses: { 200: { description: "Alive", schema: HealthModel } },
  },
  {
    method: "get",
    paths: ["/readyz"],
    summary: "Database open, anchors loaded, RPC answering",
    responses: { 200: { description: "Ready", schema: ReadyModel }, 503: { description: "Not ready", schema: ReadyModel } },
  },
];
