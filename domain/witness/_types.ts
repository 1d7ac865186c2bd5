/** The types and the schema the controller witness's files share. */
import type { SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import type { WitnessWriter } from "../../ports/witness.ts";
import type { DiscoverControllers } from "../discovery/mod.ts";
import type { PlanPolicy } from "../accounts/mod.ts";
import type { RateLimit } from "../rate_limit.ts";
import type { Fail, Ok } from "../result.ts";
import { findSchemaByName } from "../schemas.ts";

/** Error codes of the witness endpoint. */
export type WitnessCode =
  | "SUBMISSION_FAILED"
  | "OUTCOME_UNKNOWN"
  | "INVALID_INPUT"
  | "INVALID_DID"
  | "UNSUPPORTED_CHAIN"
  | "UNSUPPORTED_SUBJECT_TYPE"
  | "UNAUTHENTICATED"
  | "SPONSORED_WRITE_LIMIT_EXCEEDED"
  | "SCHEMA_NOT_ELIGIBLE"
  | "RATE_LIMITED"
  | "EVIDENCE_NOT_FOUND"
  | "NETWORK_ERROR"
  | "SCHEMA_NOT_DEPLOYED"
  | "SERVER_ERROR"
  | "RPC_ERROR"
  | "INTERNAL_ERROR"
  | "SIGNER_UNAVAILABLE";

/**
 * A failure; `retryAfterSeconds` is set on RATE_LIMITED, `unavailable` on a SUBMISSION_FAILED that the
 * service's own state causes (its wallet cannot pay), answered 503.
 */
export type WitnessFailure = Fail<WitnessCode> & { readonly retryAfterSeconds?: number; readonly unavailable?: true };

/** The answer of a written witness. */
export type WitnessWritten = {
  success: true;
  uid: HexString | null;
  txHash: HexString;
  blockNumber: number;
  observedAt: number;
  method: "dns-txt" | "did-json";
};

/** A written witness or why not. */
export type WitnessResult = Ok<WitnessWritten> | WitnessFailure;

/** What the witness needs. */
export type ControllerWitnessDeps = {
  readonly discover: DiscoverControllers;
  readonly ledger: SponsoredWriteLedger;
  /** The service's witness wallet; absent when no key is configured. */
  readonly writer: WitnessWriter | undefined;
  /** The active chain's `controller-witness` schema UID from the trust anchors, if deployed. */
  readonly witnessSchemaUid: HexString | undefined;
  /** The default chain: a request that names none is written there. */
  readonly chainId: number;
  /**
   * Decisions §30: every other served attestation chain, by id, with the witness wallet's writer and the chain's
   * `controller-witness` schema; a request's `chain` names one. Absent or empty: the default chain only.
   */
  readonly otherChains?: ReadonlyMap<number, { readonly writer: WitnessWriter | undefined; readonly witnessSchemaUid: HexString | undefined }> | undefined;
  readonly plans: PlanPolicy;
  readonly clock: Clock;
  readonly random: Random;
  /** Witness requests per account (or paying agent); the service counts it in the storage, for every instance. */
  readonly userRate: RateLimit;
  /** Witness requests per registrable domain; counted likewise (decisions §21). */
  readonly domainRate: RateLimit;
};

/** The `controller-witness` schema. */
export const WITNESS = findSchemaByName("controller-witness")!;
