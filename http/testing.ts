/**
 * Test support: the smallest dependencies the app starts with (no chain, no storage, no session), for tests that
 * read what the app publishes (/openapi.json) or add the one capability they exercise.
 */
import { createReadNonce } from "../domain/delegation/mod.ts";
import { createIdempotency } from "../domain/idempotency/mod.ts";
import { fail } from "../domain/result.ts";
import { createSubmissionStatus, createSubmissionTracker } from "../domain/submissions/mod.ts";
import type { Clock } from "../ports/clock.ts";
import { fakeEasReader, fakeIdempotencyStore, fakeRandom } from "../ports/fakes/mod.ts";
import type { ReplayStore } from "../ports/replay_store.ts";
import type { SubmissionRecordStore } from "../ports/submission_records.ts";
import type { Logger } from "../ports/logger.ts";
import type { AppDeps } from "./app.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** What every app needs; a test spreads it and adds the capability under test. */
export function minimalAppDeps(): AppDeps {
  const eas = fakeEasReader();
  return {
    eas: {
      readNonce: createReadNonce(eas),
      delegatedAttest: () => Promise.reject(new Error("unused")),
      chainName: "ATS Devnet",
      chainId: eas.chainId,
      easAddress: eas.easAddress,
    },
    trustAnchors: { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] },
    log: quiet,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
  };
}

/**
 * The public relay over `delegatedAttest` with its submissions tracked (decisions §23) on fake stores: idempotency
 * keys, submission records and their status route, no session. For tests of what a relay write answers.
 */
export function trackedRelayDeps(
  delegatedAttest: AppDeps["eas"]["delegatedAttest"],
  stores: { readonly records: SubmissionRecordStore; readonly replay: ReplayStore; readonly clock: Clock },
): AppDeps {
  const base = minimalAppDeps();
  const status = createSubmissionStatus({ records: stores.records, replay: stores.replay, head: () => Promise.resolve(5n), confirmations: 1 });
  return {
    ...base,
    eas: {
      ...base.eas,
      delegatedAttest,
      idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock: stores.clock }),
      tracking: { tracker: createSubmissionTracker({ records: stores.records, random: fakeRandom(), clock: stores.clock }), status, log: quiet },
    },
    submissions: { status, sessions: { authenticate: () => Promise.resolve(fail("UNAUTHENTICATED", "No session")) } as never },
  };
}
