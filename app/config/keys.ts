/** Signing keys and key status (decisions §17): the `keys` section. */
import { type Static, Type } from "@sinclair/typebox";
import { int, readSection, type ReadContext } from "./_declare.ts";

/** The `keys` section's variables. */
export const KeysSection = Type.Object({
  maxPerAccount: int("SIGNING_KEYS_PER_ACCOUNT", { default: 100, minimum: 1, maximum: 100_000, description: "signing keys one account may register" }),
  statusPerMinute: int("KEY_STATUS_RATE_PER_MINUTE", { default: 60, minimum: 1, maximum: 1_000_000, description: "public key-status lookups per client address a minute" }),
  statusMaxInFlight: int("KEY_STATUS_MAX_IN_FLIGHT", { default: 16, minimum: 1, maximum: 10_000, description: "key-status lookups at once" }),
}, { title: "keys" });

/** Signing keys and key status. */
export type KeysConfig = Static<typeof KeysSection>;

/** Reads the `keys` section. */
export function readKeys(ctx: Omit<ReadContext, "values">): KeysConfig {
  return readSection(KeysSection, ctx);
}
