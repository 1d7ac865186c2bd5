import { describe, expect, test } from "bun:test";
import { ATTEST_TYPES } from "../domain/delegation/mod.ts";
import type { TrustPolicy } from "../domain/identity/mod.ts";
import { createSigningBridge, fetchTrustPolicy, type SigningBridgeOptions } from "./signing_bridge.ts";

/** EAS's delegated `Revoke`: what a host must never be made to sign through the bridge. */
const REVOKE_TYPES = {
  Revoke: [
    { name: "revoker", type: "address" },
    { name: "schema", type: "bytes32" },
    { name: "uid", type: "bytes32" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint64" },
  ],
};
const EIP712_DOMAIN = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
];

const SERVICE = "https://ats.example";
const WIDGETS = "https://widgets.example";
const EAS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const SCHEMA = `0x${"a".repeat(64)}`;
const ATTESTER = "0xabcdefabcdefabcdefabcdefabcdefabcdefabcd";
const NOW_MS = 1_800_000_000_000;
const policy: TrustPolicy = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [SERVICE, WIDGETS],
  chains: { "31337": { name: "ATS Devnet", easContract: EAS, schemas: [SCHEMA] } },
};

type Posted = { message: Record<string, unknown>; targetOrigin: string };

/** A fake page: one window whose listeners get the events we dispatch, one iframe whose window records replies. */
function fakePage() {
  const listeners = new Set<(event: MessageEvent) => void>();
  const posted: Posted[] = [];
  const frameWindow = { postMessage: (message: Record<string, unknown>, targetOrigin: string) => posted.push({ message, targetOrigin }) };
  const frames = new Map<string, { contentWindow: unknown }>([["widget", { contentWindow: frameWindow }]]);
  const environment = {
    window: {
      addEventListener: (_type: string, listener: (event: MessageEvent) => void) => listeners.add(listener),
      removeEventListener: (_type: string, listener: (event: MessageEvent) => void) => listeners.delete(listener),
    } as never,
    document: { getElementById: (id: string) => frames.get(id) ?? null },
  };
  const dispatch = (data: unknown, options: { origin?: string; source?: unknown } = {}) => {
    const event = { data, origin: options.origin ?? SERVICE, source: options.source ?? frameWindow } as MessageEvent;
    for (const listener of listeners) listener(event);
  };
  return { environment, posted, frames, frameWindow, dispatch, listeners };
}

function request(overrides: { domain?: unknown; message?: unknown; types?: unknown; id?: unknown } = {}) {
  return {
    type: "omatrust:signTypedData",
    id: "id" in overrides ? overrides.id : "req-1",
    domain: "domain" in overrides ? overrides.domain : { name: "EAS", version: "1.4.0", chainId: 31337, verifyingContract: EAS },
    types: "types" in overrides ? overrides.types : ATTEST_TYPES,
    message: "message" in overrides ? overrides.message : { schema: SCHEMA, attester: ATTESTER, deadline: BigInt(NOW_MS / 1000 + 600) },
  };
}

const policyFetch = (body: unknown, status = 200) => (url: string) => {
  expect(url).toBe(`${SERVICE}/v1/trust-policy`);
  return Promise.resolve(new Response(JSON.stringify(body), { status }));
};

async function bridge(options: Partial<SigningBridgeOptions> = {}) {
  const page = fakePage();
  const calls: unknown[][] = [];
  const running = await createSigningBridge({
    iframeId: "widget",
    baseUrl: SERVICE,
    signTypedData: (...args) => {
      calls.push(args);
      return Promise.resolve(`0x${"1".repeat(130)}`);
    },
    fetch: policyFetch(policy),
    now: () => NOW_MS,
    environment: page.environment,
    ...options,
  });
  /** Waits until the bridge has answered `count` messages (a signer's answer comes a turn later). */
  const answered = async (count: number) => {
    while (page.posted.length < count) await Promise.resolve();
    return page.posted[count - 1]!;
  };
  return { ...page, calls, running, answered };
}

describe("createSigningBridge: start", () => {
  test("the trust policy is read from the service at creation; none, or one allowing nothing, throws (fail closed)", async () => {
    await expect(bridge({ fetch: policyFetch({ error: "x" }, 500) })).rejects.toThrow("HTTP 500");
    await expect(bridge({ fetch: () => Promise.reject(new Error("down")) })).rejects.toThrow("Failed to fetch the trust policy");
    // Today's anchors (name → UID maps, CAIP-2 keys) are not a policy.
    await expect(bridge({ fetch: policyFetch({ ...policy, chains: { "eip155:31337": { name: "x", easContract: EAS, schemas: { "user-review": SCHEMA } } } }) }))
      .rejects.toThrow("Trust policy");
    await expect(bridge({ fetch: policyFetch({ ...policy, chains: {} }) })).rejects.toThrow("Trust policy contains no allowed contracts or schemas");
  });

  test("fetchTrustPolicy reads the document as the service serves it", async () => {
    expect(await fetchTrustPolicy({ url: `${SERVICE}/v1/trust-policy`, fetch: policyFetch(policy) })).toEqual(policy);
  });
});

describe("createSigningBridge: the rules", () => {
  test("ready from the widget is answered hostReady to its origin; a valid request is signed and answered with its id", async () => {
    const b = await bridge();
    b.dispatch({ type: "omatrust:ready" });
    expect(b.posted[0]).toEqual({ message: { type: "omatrust:hostReady" }, targetOrigin: SERVICE });
    const asked = request();
    b.dispatch(asked);
    expect(await b.answered(2)).toEqual({ message: { type: "omatrust:signature", id: "req-1", signature: `0x${"1".repeat(130)}` }, targetOrigin: SERVICE });
    expect(b.calls).toEqual([[asked.domain, asked.types, asked.message]]);
  });

  test("origins: the service's, the policy's widgetOrigins and the dev override are trusted; any other is ignored", async () => {
    const b = await bridge({ devOriginOverride: "http://localhost:3000/" });
    for (const origin of [SERVICE, WIDGETS, "http://localhost:3000"]) b.dispatch({ type: "omatrust:ready" }, { origin });
    for (const origin of ["https://evil.example", "https://ats.example.evil.example", "null", "http://ats.example"]) {
      b.dispatch(request(), { origin });
    }
    expect(b.posted.map((p) => p.targetOrigin)).toEqual([SERVICE, WIDGETS, "http://localhost:3000"]);
    expect(b.calls).toEqual([]);
  });

  test("source: only the iframe's window, looked up by id on each message (a remounted iframe works, a missing one is ignored)", async () => {
    const b = await bridge();
    b.dispatch(request(), { source: { postMessage: () => {} } });
    expect([b.posted.length, b.calls.length]).toEqual([0, 0]);
    const remounted: Posted[] = [];
    const newWindow = { postMessage: (message: Record<string, unknown>, targetOrigin: string) => remounted.push({ message, targetOrigin }) };
    b.frames.set("widget", { contentWindow: newWindow });
    b.dispatch(request(), { source: b.frameWindow });
    expect(b.calls.length).toBe(0);
    b.dispatch(request({ id: "after-remount" }), { source: newWindow });
    while (remounted.length === 0) await Promise.resolve();
    expect(remounted[0]!.message).toMatchObject({ type: "omatrust:signature", id: "after-remount" });
    b.frames.delete("widget");
    b.dispatch(request(), { source: newWindow });
    expect(b.calls.length).toBe(1);
  });

  test("every rule refuses with signatureError and never calls the wallet", async () => {
    const future = BigInt(NOW_MS / 1000 + 600);
    const msg = (extra: Record<string, unknown>) => ({ schema: SCHEMA, attester: ATTESTER, deadline: future, ...extra });
    const dom = (extra: Record<string, unknown>) => ({ name: "EAS", version: "1.4.0", chainId: 31337, verifyingContract: EAS, ...extra });
    const cases: [ReturnType<typeof request>, string][] = [
      [request({ id: "" }), "Missing or invalid request id"],
      [request({ id: 7 }), "Missing or invalid request id"],
      [request({ domain: null }), "Missing domain object"],
      [request({ types: "x" }), "Missing types object"],
      [request({ message: [] }), "Missing message object"],
      [request({ domain: dom({ name: "BAD" }) }), "Signing request rejected"],
      [request({ domain: dom({ version: "1.3.0" }) }), "Unexpected domain version"],
      [request({ domain: dom({ chainId: 0 }) }), "Invalid domain chainId"],
      [request({ domain: dom({ chainId: 1.5 }) }), "Invalid domain chainId"],
      [request({ domain: dom({ chainId: "0x7a69" }) }), "Invalid domain chainId"],
      [request({ domain: dom({ chainId: 1 }) }), "Chain 1 is not in the trust policy"],
      [request({ domain: dom({ verifyingContract: "0x1234" }) }), "Invalid verifyingContract"],
      [request({ domain: dom({ verifyingContract: `0x${"9".repeat(40)}` }) }), "not in the trust policy"],
      [request({ message: msg({ schema: "0x1234" }) }), "Invalid schema UID"],
      [request({ message: msg({ schema: `0x${"b".repeat(64)}` }) }), "Schema"],
      [request({ message: msg({ attester: "0x1234" }) }), "Invalid attester address"],
      [request({ message: msg({ deadline: 0 }) }), "Invalid deadline"],
      [request({ message: msg({ deadline: "soon" }) }), "Invalid deadline"],
      [request({ message: msg({ deadline: NOW_MS / 1000 }) }), "Deadline has passed"],
      // Under the EAS domain only EAS's Attest: a delegated Revoke would let the widget revoke the user's attestations.
      [request({ types: REVOKE_TYPES }), "only EAS's Attest type may be signed"],
      [request({ types: { ...ATTEST_TYPES, ...REVOKE_TYPES } }), "only EAS's Attest type may be signed"],
      [request({ types: {} }), "only EAS's Attest type may be signed"],
      [request({ types: { Attest: ATTEST_TYPES.Attest.slice(0, 9) } }), "the Attest type is not EAS's"],
      [request({ types: { Attest: ATTEST_TYPES.Attest.map((f) => (f.name === "recipient" ? { ...f, type: "bytes32" } : f)) } }), "the Attest type is not EAS's"],
      [request({ types: { Attest: [...ATTEST_TYPES.Attest.slice(1), ATTEST_TYPES.Attest[0]] } }), "the Attest type is not EAS's"],
      [request({ types: { Attest: ATTEST_TYPES.Attest.map((f, i) => (i === 0 ? { ...f, extra: 1 } : f)) } }), "the Attest type is not EAS's"],
      [request({ types: { ...ATTEST_TYPES, EIP712Domain: [...EIP712_DOMAIN, { name: "salt", type: "bytes32" }] } }), "unexpected EIP712Domain type"],
    ];
    const b = await bridge();
    for (const [asked, reason] of cases) {
      const before = b.posted.length;
      b.dispatch(asked);
      const answer = b.posted[before]?.message;
      expect({ reason, type: answer?.type, id: answer?.id }).toEqual({ reason, type: "omatrust:signatureError", id: asked.id });
      expect({ reason, error: String(answer?.error).includes(reason) }).toEqual({ reason, error: true });
    }
    expect(b.calls).toEqual([]);
  });

  test("EAS's Attest type, alone or with the standard EIP712Domain, in any key order, is signed", async () => {
    const b = await bridge();
    const asked = [
      request({ id: "alone" }),
      request({ id: "with-domain", types: { EIP712Domain: EIP712_DOMAIN, ...ATTEST_TYPES } }),
    ];
    for (const [i, one] of asked.entries()) {
      b.dispatch(one);
      expect((await b.answered(i + 1)).message).toEqual({ type: "omatrust:signature", id: one.id, signature: `0x${"1".repeat(130)}` });
    }
    expect(b.calls.map((call) => call[1])).toEqual(asked.map((one) => one.types));
  });

  test("a wallet that refuses or throws is answered signatureError with its message; other messages are ignored", async () => {
    const b = await bridge({ signTypedData: () => Promise.reject(new Error("User rejected the request")) });
    b.dispatch(request());
    expect((await b.answered(1)).message).toEqual({ type: "omatrust:signatureError", id: "req-1", error: "User rejected the request" });
    const c = await bridge({ signTypedData: () => { throw new Error("no wallet"); } });
    c.dispatch(request());
    expect((await c.answered(1)).message).toMatchObject({ type: "omatrust:signatureError", error: "no wallet" });
    for (const data of [null, "omatrust:ready", { type: "other" }, { foo: 1 }, { type: "omatrust:signature", id: "x" }]) c.dispatch(data);
    expect(c.posted.length).toBe(1);
  });

  test("destroy stops listening", async () => {
    const b = await bridge();
    b.running.destroy();
    expect(b.listeners.size).toBe(0);
  });
});
