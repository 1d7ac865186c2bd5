/** The read tools' `chain` (decisions §30): each tool reads the chain it names, and its answer names it. */
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../adapters/observability/mod.ts";
import { buildServedChains } from "../../../domain/chains/mod.ts";
import type { TrustAnchors } from "../../../ports/trust_anchors.ts";
import { createTools, type McpToolDeps } from "./_tools.ts";

const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { "eip155:31337": { name: "A", easContract: `0x${"a".repeat(40)}`, schemas: {} }, "eip155:31338": { name: "B", easContract: `0x${"b".repeat(40)}`, schemas: {} } },
  registries: [],
};
const served = buildServedChains([{ chainId: 31337, role: "attestations" }, { chainId: 31338, role: "attestations" }, { chainId: 31339, role: "proofs" }], anchors);
if (!served.ok) throw new Error(served.message);

function setup(witnessed: unknown[] = []) {
  const calls: string[] = [];
  const on = (chain: string) => ({
    attestationList: (() => {
      calls.push(`list ${chain}`);
      return Promise.resolve({ ok: true, value: { items: [], nextCursor: null } });
    }) as never,
    keyStatus: (() => {
      calls.push(`key ${chain}`);
      return Promise.resolve({ ok: true, value: { status: "unknown" } });
    }) as never,
    controllerAuthorization: (() => {
      calls.push(`authorize ${chain}`);
      return Promise.resolve({ ok: true, value: { authorized: false } });
    }) as never,
    artifactTrust: (() => {
      calls.push(`artifact ${chain}`);
      return Promise.resolve({ ok: true, value: { artifactDid: "x" } });
    }) as never,
  });
  const rate = { take: () => ({ allowed: true as const }) };
  const deps: McpToolDeps = {
    ...on("A"),
    confirm: (() => Promise.reject(new Error("unused"))) as never,
    trustAnchors: anchors,
    keyStatusRate: rate,
    witness: ((body: unknown) => {
      witnessed.push(body);
      return Promise.resolve({ result: { ok: true, value: { success: true, uid: null, txHash: `0x${"c".repeat(64)}`, blockNumber: 1, observedAt: 1, method: "dns-txt" } } });
    }) as never,
    subscription: () => Promise.reject(new Error("unused")),
    log: silentLogger,
    chains: { served: served.ok ? served.value : undefined!, reads: new Map([[31338, on("B")]]) },
  };
  const tools = createTools(deps, { withAccountTools: true });
  const account = { id: "acc-1", address: `0x${"a1".repeat(20)}`, plan: "free", createdAtMs: 0 } as never;
  const run = (name: string, args: unknown) => tools.find((tool) => tool.name === name)!.run(args, { clientKey: "unknown", account });
  return { calls, run };
}

const B = { chainId: 31338, caip2: "eip155:31338", easContract: `0x${"b".repeat(40)}` };

describe("MCP read tools on several chains (decisions §30)", () => {
  test("chain picks the chain read; the answer names it; absent, the default chain", async () => {
    const env = setup();
    expect(await env.run("list_attestations", { attester: `0x${"1".repeat(40)}`, chain: "eip155:31338" })).toMatchObject({ ok: true, value: { chain: B } });
    expect(await env.run("key_status", { subjectDid: "did:web:a.example", keyDid: "did:key:z6Mk", chain: 31338 })).toMatchObject({ ok: true, value: { chain: B } });
    expect(await env.run("controller_authorization", { subjectDid: "did:web:a.example", controllerDid: "did:jwk:x", chain: "31338" })).toMatchObject({ ok: true, value: { chain: B } });
    expect(await env.run("check_artifact_trust", { artifactDid: "did:artifact:x", chain: "31338" })).toMatchObject({ ok: true });
    expect(await env.run("list_attestations", { attester: `0x${"1".repeat(40)}` })).toMatchObject({ ok: true, value: { chain: { chainId: 31337 } } });
    expect(env.calls).toEqual(["list B", "key B", "authorize B", "artifact B", "list A"]);
  });

  test("a chain not served, or a proof chain, is UNSUPPORTED_CHAIN; a malformed one INVALID_INPUT; nothing read", async () => {
    const env = setup();
    expect(await env.run("list_attestations", { attester: `0x${"1".repeat(40)}`, chain: "eip155:1" })).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    expect(await env.run("key_status", { subjectDid: "did:web:a.example", keyDid: "did:key:z6Mk", chain: 31339 })).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    expect(await env.run("list_attestations", { attester: `0x${"1".repeat(40)}`, chain: "base" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    // As the route answers `?chain=0`: the chain is named, not the artifact (the tool said INVALID_DID). No artifactDid
    // is still INVALID_DID.
    for (const chain of [0, "", -5, 1.5, true]) {
      expect(await env.run("check_artifact_trust", { artifactDid: "did:artifact:x", chain })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
    expect(await env.run("check_artifact_trust", { artifactDid: "did:artifact:x", extra: 1 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await env.run("check_artifact_trust", { chain: 31338 })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(env.calls).toEqual([]);
  });

  test("request_controller_witness takes chain as the route does (CAIP-2 or an id), and chainId as its older spelling", async () => {
    const witnessed: unknown[] = [];
    const env = setup(witnessed);
    const dids = { subjectDid: "did:web:a.example", controllerDid: `did:pkh:eip155:1:0x${"1".repeat(40)}` };
    for (const chain of [{ chain: "eip155:31338" }, { chain: 31338 }, { chainId: 31338 }]) {
      expect(await env.run("request_controller_witness", { ...dids, ...chain })).toMatchObject({ ok: true, value: { success: true } });
    }
    // The use case reads the chain as the route's body (domain/witness: parseWitnessBody).
    expect(witnessed).toEqual([{ ...dids, chain: "eip155:31338" }, { ...dids, chain: 31338 }, { ...dids, chainId: 31338 }]);
    expect(await env.run("request_controller_witness", { ...dids, chains: 31338 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });

  test("get_trust_anchors lists the served chains", async () => {
    const env = setup();
    const answer = await env.run("get_trust_anchors", {});
    expect(answer).toMatchObject({ ok: true, value: { defaultChain: "eip155:31337", servedChains: [{ chainId: 31337, default: true }, { chainId: 31338, default: false }, { chainId: 31339, role: "proofs" }] } });
  });
});
