/**
 * The x402 key trust check reading its evidence from the chain (`checkControllerTrust` with `chain`), over a hand-written
 * reader: a key binding whose EAS expiry has passed still ends its key's window (decisions §25), as the service's key
 * status says `expired`.
 */
import { describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { checkControllerTrust } from "./x402.ts";

const CHAIN_ID = 66238;
const SUBJECT = "did:web:api.example.com";
const KEY = "did:pkh:eip155:1:0x1111111111111111111111111111111111111111";
const OWNER = "0x2222222222222222222222222222222222222222";
const ISSUER = "0x3333333333333333333333333333333333333333";
const WITNESS_UID = `0x${"e1".repeat(32)}` as Hex;
const BINDING_UID = `0x${"e2".repeat(32)}` as Hex;
const ANCHORS = {
  version: 1,
  updatedAt: "",
  widgetOrigins: [],
  chains: { [`eip155:${CHAIN_ID}`]: { name: "test", easContract: `0x${"44".repeat(20)}`, schemas: { "controller-witness": WITNESS_UID, "key-binding": BINDING_UID } } },
  registries: [{ type: "approved-issuers", issuers: [{ address: ISSUER, label: "witness", schemas: ["controller-witness"], status: "active" }] }],
};
const WITNESSED = 1_700_000_000n;
const BOUND = 1_700_000_100n;
const EXPIRY = 1_700_100_000n;

const encoded = (name: string, data: Record<string, unknown>) => {
  const out = encodeSchemaData(findSchemaByName(name)!.schema, data);
  if (!out.ok) throw new Error(out.message);
  return out.value as Hex;
};
const record = (uid: string, schema: Hex, attester: string, time: bigint, expirationTime: bigint, data: Hex) => ({
  uid, schema, time, expirationTime, revocationTime: 0n, refUID: `0x${"00".repeat(32)}`, recipient: `0x${"00".repeat(20)}`, attester, revocable: true, data,
});
/** The key and the owner witnessed; the owner binds the key until EXPIRY, in the payload and as the EAS expiry alike. */
const RECORDS = [
  record(`0x${"a1".repeat(32)}`, WITNESS_UID, ISSUER, WITNESSED, 0n, encoded("controller-witness", { subject: SUBJECT, controller: KEY, method: "dns-txt", observedAt: WITNESSED })),
  record(`0x${"a2".repeat(32)}`, WITNESS_UID, ISSUER, WITNESSED, 0n, encoded("controller-witness", { subject: SUBJECT, controller: `did:pkh:eip155:${CHAIN_ID}:${OWNER}`, method: "dns-txt", observedAt: WITNESSED })),
  record(`0x${"a3".repeat(32)}`, BINDING_UID, OWNER, BOUND, EXPIRY, encoded("key-binding", {
    subject: SUBJECT, keyId: KEY, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: BOUND, effectiveAt: 0n, expiresAt: EXPIRY,
  })),
];
const reader = {
  getLogs: () => Promise.resolve(RECORDS.map((r) => ({ args: { uid: r.uid } }))),
  readContract: ({ args }: { args: [string] }) => Promise.resolve(RECORDS.find((r) => r.uid === args[0])),
} as never;
const trustAt = (at: bigint) =>
  checkControllerTrust(
    { subjectDid: SUBJECT, signer: { format: "eip712", controllerDid: KEY }, at: Number(at) },
    { endpointKeys: () => Promise.resolve([`did:pkh:eip155:1:${OWNER}`]), chain: { rpc: reader, chainId: CHAIN_ID, trustAnchors: ANCHORS as never } },
  );

describe("checkControllerTrust() over the chain", () => {
  test("a key binding past its EAS expiry ends its key's window; before it, the key is trusted", async () => {
    const during = await trustAt(EXPIRY - 1_000n);
    expect(during.tier).toBeGreaterThan(0);
    // Before, the expired binding was dropped as it was read, and the key's old witness rated it tier 2.
    const after = await trustAt(EXPIRY + 1_000n);
    expect(after.tier).toBe(0);
    expect(after.keyBindings).toHaveLength(1);
  });
});

describe("checkControllerTrust() with the service's endpoint evidence", () => {
  /** `/v1/controller-endpoint-confirm` answering 200 with these keys and sources, as the service does. */
  /** A status `unavailable-lasting` is an `unavailable` source with `lasting: true` (read, and unusable for good). */
  const serviceWith = (keys: string[], statuses: string[]) => ({
    baseUrl: "http://service.invalid",
    fetch: (() =>
      Promise.resolve(Response.json({
        subject: { input: SUBJECT, canonical: SUBJECT, label: SUBJECT, type: "did:web", source: "input" },
        controllerKeys: keys.map((canonicalId) => ({ canonicalId })),
        evidence: statuses.map((status, i) => ({
          kind: i < 2 ? "dns-txt" : "did-json",
          location: `source ${i}`,
          keys: [],
          ...(status === "unavailable-lasting" ? { status: "unavailable", lasting: true } : { status }),
        })),
      }))) as never,
  });
  const trust = (options: ReturnType<typeof serviceWith>) =>
    checkControllerTrust({ subjectDid: SUBJECT, signer: { format: "eip712", controllerDid: KEY }, at: Number(BOUND) }, options);

  test("a source the service could not read, the signer not named by the others: NETWORK_ERROR, never tier 0", async () => {
    // Before, tier 0 "none": a DNS timeout, or a domain's lookup budget anyone can spend, rated a real key as unknown.
    expect(await trust(serviceWith([], ["unavailable", "not-found", "unavailable"])).catch((e: { code?: string }) => e.code)).toBe("NETWORK_ERROR");
    expect(await trust(serviceWith([`did:pkh:eip155:1:${OWNER}`], ["found", "unavailable", "not-found"])).catch((e: { code?: string }) => e.code)).toBe("NETWORK_ERROR");
  });

  test("the signer named by a source that answered: decided, whatever another did", async () => {
    const decided = await trust(serviceWith([KEY], ["found", "unavailable", "not-found"]));
    expect(decided.tier).toBe(1);
    expect((await trust(serviceWith([], ["not-found", "not-found", "not-found"]))).tier).toBe(0);
  });

  test("a source read and unusable for good (lasting: a did.json that is not JSON) names nothing: decided, not NETWORK_ERROR", async () => {
    // Before, NETWORK_ERROR: a subject's broken document read as an outage of the service's lookups.
    expect((await trust(serviceWith([], ["not-found", "not-found", "unavailable-lasting"]))).tier).toBe(0);
    expect(await trust(serviceWith([], ["unavailable", "not-found", "unavailable-lasting"])).catch((e: { code?: string }) => e.code)).toBe("NETWORK_ERROR");
  });
});
