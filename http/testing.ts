/**
 * Test support: the smallest dependencies the app starts with (no chain, no storage, no session), for tests that
 * read what the app publishes (/openapi.json) or add the one capability they exercise.
 */
import { createReadNonce } from "../domain/delegation/mod.ts";
import { fakeEasReader } from "../ports/fakes/mod.ts";
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
