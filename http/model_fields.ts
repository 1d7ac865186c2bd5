/** The field schemas the models of several capabilities share: addresses, hashes, integers, texts. */
import { Type as t } from "@sinclair/typebox";

export const Address = t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "EVM address, 0x-prefixed, 20 bytes" });

export const Bytes32 = t.String({ pattern: "^0x[0-9a-fA-F]{64}$" });

export const Uint = t.String({ pattern: "^[0-9]+$", description: "base-10 integer" });

export const SAFE_MAX = Number.MAX_SAFE_INTEGER;

/** A request string of the sign-in and witness bodies: present means 1 to 2,048 characters. */
export const Text = (description?: string) => t.String({ minLength: 1, maxLength: 2_048, ...(description ? { description } : {}) });

/** A query value with at least one non-blank character. */
export const NonBlank = (description: string) => t.String({ pattern: "\\S", description });

// The delegated-attest body as the domain parser (`parseDelegatedRequest`) reads it: the schema UID from
// `delegatedRequest.schema`, its alias `schemaUid` or the signed message; the deadline from `delegatedRequest`
// or the message; each attestation field from `typedData.message` when the message is an object holding it
// (not null), else from `delegatedRequest`, else the EAS default. The model states exactly those rules, so it
// accepts every body the parser accepts, and the parser stays the authority for what the values mean.
export const Uint64 = t.Union([
  t.String({ pattern: "^0*[0-9]{1,20}$", maxLength: 78, description: "base-10 uint64" }),
  t.Integer({ minimum: 0, maximum: SAFE_MAX }),
]);

export const ZeroValue = t.Union([t.String({ pattern: "^0{1,78}$" }), t.Literal(0)], { description: "Always 0" });

export const HexBytes = t.String({ pattern: "^0x([0-9a-fA-F]{2})*$" });

export const NotNull = t.Not(t.Null());

export const SubjectDid = NonBlank("Service DID; bare domains become did:web");

export const ChainId = t.Integer({ minimum: 1, maximum: SAFE_MAX });

export const Legacy = () => t.String({ minLength: 1, maxLength: 2_048, deprecated: true });

/** The chain an answer was read on (decisions §30): `chain {chainId, caip2, easContract}`. */
export const ChainAnswerModel = t.Object({
  chainId: t.Integer({ minimum: 1 }),
  caip2: t.String({ pattern: "^eip155:[1-9][0-9]*$" }),
  easContract: t.Union([t.String({ pattern: "^0x[0-9a-fA-F]{40}$" }), t.Null()], { description: "The chain's EAS contract as the trust anchors name it" }),
}, { description: "The chain the answer was read on (decisions §30)" });

/** The `chain` query parameter of the public reads (decisions §30). */
export const ChainParam = t.Optional(t.String({
  maxLength: 64,
  description: "The chain to read: CAIP-2 (eip155:8453) or a decimal chain id (8453); default the deployment's default chain (servedChains and defaultChain of /v1/trust-anchors). Malformed: 400 INVALID_INPUT; not served: 400 UNSUPPORTED_CHAIN",
}));
