/** The relays (decisions §12, issue 23, issue 43): the `relays` section, with the fee bumps of their submissions. */
import { type Static, Type } from "@sinclair/typebox";
import { bigInt, int, list, onOff, readSection, type ReadContext } from "./_declare.ts";

// A tenth of the hour's budget, and room for one request of the most gas allowed where the budget has it.
const share = ({ values }: ReadContext) => {
  const gasPerHour = Number(values.gasPerHour);
  return Math.max(Math.floor(gasPerHour / 10), Math.min(gasPerHour, Number(values.maxGasPerTx)));
};
const SHARE_DOC = "a tenth of the budget (at least PUBLIC_RELAY_MAX_GAS_PER_TX where the budget holds it): 5000000";

/** The `relays` section's variables. */
export const RelaysSection = Type.Object({
  subsidizedSchemas: list("SUBSIDIZED_SCHEMAS", { default: ["user-review", "linked-identifier"], description: "schema names the public relay accepts" }),
  deadlineMarginSeconds: int("DEADLINE_MARGIN_SECONDS", {
    default: 30,
    // Below the 600 s ahead the widget and the client helpers sign for, or every one of their requests is refused.
    maximum: 300,
    description: "a delegated signature's deadline must be at least this far ahead (else 400 SIGNATURE_EXPIRED, nothing sent)",
  }),
  publicRelay: Type.Object({
    enabled: onOff("PUBLIC_RELAY", { default: true, description: "off closes the public delegated-attest route" }),
    ipPerMinute: int("PUBLIC_RELAY_IP_RATE_PER_MINUTE", { default: 30, minimum: 1, maximum: 1_000_000, description: "public writes per client address per minute" }),
    noncePerMinute: int("NONCE_RATE_PER_MINUTE", { default: 120, minimum: 1, maximum: 1_000_000, description: "public nonce reads (one eth_call each) per client address per minute" }),
    attesterPerHour: int("PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR", { default: 20, minimum: 1, maximum: 1_000_000, description: "public writes per attester per hour" }),
    gasPerHour: bigInt("PUBLIC_RELAY_GAS_BUDGET_PER_HOUR", { default: 50_000_000, minimum: 1, description: "gas the public relay may spend per UTC hour" }),
    maxGasPerTx: int("PUBLIC_RELAY_MAX_GAS_PER_TX", { default: 3_000_000, minimum: 21_000, description: "the most gas one public write may need" }),
    clientGasPerHour: bigInt("PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR", { default: share, doc: SHARE_DOC, minimum: 1, description: "gas one client address may be charged per hour" }),
    attesterGasPerHour: bigInt("PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR", { default: share, doc: "as the client's", minimum: 1, description: "gas one attester may be charged per hour" }),
  }),
  privateRelay: Type.Object({
    subjectScoped: list("SUBJECT_SCOPED_SCHEMAS", {
      default: ["key-binding", "linked-identifier", "user-review-response"],
      description: "schemas only a subject's owner may write",
    }),
    maxGasPerTx: int("MAX_GAS_PER_TX", { default: 1_000_000, minimum: 21_000, description: "the most gas one private-relay write may need" }),
    accountPerMinute: int("PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE", { default: 120, minimum: 1, maximum: 1_000_000, description: "private-relay writes (single or batch) per account per minute" }),
    gasPerHour: bigInt("PRIVATE_RELAY_GAS_BUDGET_PER_HOUR", { default: 50_000_000, minimum: 1, description: "gas the private relay may charge per UTC hour" }),
    freeAccountGasPerHour: bigInt("PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR", {
      default: share,
      doc: "a tenth of the budget (at least MAX_GAS_PER_TX where the budget holds it): 5000000",
      minimum: 1,
      description: "gas one free-plan account's private-relay writes may be charged per hour (paying accounts have no share)",
    }),
  }),
  feeBump: Type.Object({
    afterSeconds: int("FEE_BUMP_AFTER_SECONDS", { default: 120, maximum: 86_400, description: "a transaction pending this long is replaced (0: never)" }),
    max: int("FEE_BUMP_MAX", { default: 5, maximum: 50, description: "the most replacements one submission gets" }),
  }),
}, { title: "relays" });

/** The public and private relays' guards and budgets, and the fee bumps of their submissions. */
export type RelaysConfig = Static<typeof RelaysSection>;

/** Reads the `relays` section. */
export function readRelays(ctx: Omit<ReadContext, "values">): RelaysConfig {
  return readSection(RelaysSection, ctx);
}
