/**
 * Every parser of remote or client text stays linear (issue 15): each is fed the worst input we know at the
 * largest size it can receive, and must take no longer than a bounded multiple of a benign input of the same
 * size, timed in the same run (a relative budget: machines here are noisy, an absolute time means little).
 * Before the fix, 60,000 `"` inside a TXT `controller=` value took 2.5 s in the quote trimming, against about a
 * millisecond for as many letters; 192 distinct did:jwk controller keys took 2 s to merge pairwise.
 *
 * Sizes: a TXT record is at most one DNS message (64 KiB over TCP), a did.json at most 64 KiB, a controller value
 * at most MAX_CONTROLLER_VALUE (2,048) characters; client text is tested at SIZE (the request fields are capped
 * at 2,048 characters, bodies at 8 MiB, and every parser here is linear, so more size only scales both sides).
 */
import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { createControllerConfirm } from "./controller_confirm.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { canonicalControllerKey, MAX_CONTROLLER_VALUE } from "./controller_values.ts";
import { controllerKeysFromDidDocument } from "./did_document.ts";
import { controllerKeysFromJwks } from "./jwk_keys.ts";
import { createKeySet } from "./key_set.ts";
import { explainControllerTxtRecord, parseControllerTxtRecord } from "./txt_records.ts";
import { base64UrlEncode, buildDidPkhFromCaip10, didWebLocation, isSameControllerId, jwkToDidJwk, normalizeDid, parseArtifactDid } from "../did/mod.ts";
import { resolveIdentity } from "../identity/mod.ts";
import { parseProofWrappers } from "../artifact_trust/mod.ts";
import { parseSiweMessage } from "../sessions/mod.ts";
import { decodeCompactJws, readReceiptPayload, resourceUrlToDidWeb } from "../payments/mod.ts";
import { didKeyToJwk } from "../payments/mod.ts";

/** Size of the largest remote text: a TXT answer fits a 64 KiB DNS message; did.json is capped at 64 KiB. */
const SIZE = 60_000;

type Options = {
  /** Calls per timed run, so that inputs capped small (2,048 characters) take long enough to time. */
  readonly repeat?: number | undefined;
};

/** The best of a few runs, in milliseconds. */
async function best(run: () => unknown, repeat: number): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    for (let n = 0; n < repeat; n++) await run();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

/**
 * Adversarial input must cost at most 100 times a benign one of the same size, with 200 ms of slack for tiny times.
 * The defects this guards were 2,500 times (2.5 s against 1 ms); a linear parser stays within a few times. The margin is
 * wide on purpose: under a loaded machine (files in parallel) a 20x budget went red once with no defect behind it.
 */
async function expectLinear(name: string, parse: (input: string) => unknown, benign: string, adversarial: string, options: Options = {}) {
  expect(adversarial.length).toBeGreaterThanOrEqual(benign.length * 0.9);
  const repeat = options.repeat ?? 1;
  const base = await best(() => parse(benign), repeat);
  const worst = await best(() => parse(adversarial), repeat);
  expect({ name, withinBudget: worst <= Math.max(100 * base, base + 200) }).toEqual({ name, withinBudget: true });
}

const quotes = '"'.repeat(SIZE);
/** Quotes inside the value: what made `/^"+|"+$/g` retry from every position (2.5 s for this size). */
const innerQuotes = `a${'"'.repeat(SIZE)}a`;
const letters = "a".repeat(SIZE);

/** The did:jwk of a distinct RSA-4096 public key (about 960 characters: the largest key a controller value holds). */
function rsaDidJwk(i: number): string {
  const n = base64UrlEncode(Uint8Array.from({ length: 512 }, (_, k) => (k < 4 ? i >>> (8 * (3 - k)) : i * 131 + k * 7) & 0xff));
  const did = jwkToDidJwk({ kty: "RSA", e: "AQAB", n });
  if (!did.ok) throw new Error(did.message);
  return did.value;
}

/** A did:pkh padded with a trailing fragment to the length of an RSA did:jwk, so both sides are as long. */
function pkhLike(i: number, length: number): string {
  const did = `did:pkh:eip155:1:0x${i.toString(16).padStart(40, "0")}`;
  return `${did}#${"k".repeat(Math.max(0, length - did.length - 1))}`;
}

/** Entries joined with `sep` until they fill `size` characters. */
function fill(size: number, sep: string, entry: (i: number) => string): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const next = entry(i);
    parts.push(next);
    length += next.length + sep.length;
  }
  return parts.join(sep);
}

describe("parsers of remote text are linear at their largest input", () => {
  test("controller keys: quotes, colons, percent signs, beyond the cap", async () => {
    await expectLinear("canonicalControllerKey quotes", canonicalControllerKey, letters, quotes);
    await expectLinear("canonicalControllerKey inner quotes", canonicalControllerKey, letters, innerQuotes);
    await expectLinear("canonicalControllerKey quoted did", canonicalControllerKey, letters, `${'"'.repeat(SIZE / 2)}did:pkh:eip155:1:${'"'.repeat(SIZE / 2)}`);
    await expectLinear("canonicalControllerKey colons", canonicalControllerKey, letters, "eip155:" + ":".repeat(SIZE));
  });

  test("controller keys at the largest value read (2,048 characters), many times over", async () => {
    const max = MAX_CONTROLLER_VALUE;
    const benign = "a".repeat(max);
    const options = { repeat: 200 };
    await expectLinear("quotes at the cap", canonicalControllerKey, benign, '"'.repeat(max), options);
    await expectLinear("inner quotes at the cap", canonicalControllerKey, benign, `a${'"'.repeat(max - 2)}a`, options);
    await expectLinear("quoted did at the cap", canonicalControllerKey, benign, `${'"'.repeat(max / 2 - 9)}did:pkh:eip155:1:${'"'.repeat(max / 2 - 9)}`, options);
    await expectLinear("spaces at the cap", canonicalControllerKey, benign, `a${" ".repeat(max - 2)}a`, options);
    await expectLinear("colons at the cap", canonicalControllerKey, benign, `eip155:${":".repeat(max - 7)}`, options);
    await expectLinear("percent at the cap", canonicalControllerKey, benign, `did:web:${"%".repeat(max - 8)}`, options);
    await expectLinear("did:jwk at the cap", canonicalControllerKey, `did:key:z${"a".repeat(max - 9)}`, `did:jwk:${"A".repeat(max - 8)}`, options);
  });

  test("TXT records: one huge value, many controllers, separators", async () => {
    const many = Array.from({ length: SIZE / 60 }, (_, i) => `controller=did:pkh:eip155:1:0x${i.toString(16).padStart(40, "0")}`).join(";");
    await expectLinear("txt quotes", parseControllerTxtRecord, `v=1;controller=${letters}`, `v=1;controller=${innerQuotes}`);
    await expectLinear("txt many controllers", parseControllerTxtRecord, `v=1;controller=${letters}`, `v=1;${many}`);
    await expectLinear("txt separators", parseControllerTxtRecord, letters, ";".repeat(SIZE / 2) + " ".repeat(SIZE / 2));
    await expectLinear("txt equals", parseControllerTxtRecord, letters, "=".repeat(SIZE));
    const jwks = fill(SIZE, ";", (i) => `controller=${rsaDidJwk(i)}`);
    const pkhs = fill(SIZE, ";", (i) => `controller=${pkhLike(i, 962)}`);
    await expectLinear("txt distinct did:jwk keys", parseControllerTxtRecord, pkhs, jwks);
    const quoted = fill(SIZE, ";", () => `controller=${'"'.repeat(MAX_CONTROLLER_VALUE - 11)}`);
    await expectLinear("txt values of quotes at the cap", parseControllerTxtRecord, pkhs, quoted);
    // What the console shows of a record (notes for ignored values) is bounded the same way.
    await expectLinear("explained did:jwk keys", explainControllerTxtRecord, pkhs, jwks);
    await expectLinear("explained junk values", explainControllerTxtRecord, pkhs, fill(SIZE, ";", (i) => `controller=junk${i}`));
  });

  test("did.json: a quoted blockchainAccountId and as many verification methods as fit 64 KiB", async () => {
    const subject = "did:web:svc.example";
    const doc = (methods: unknown[]) => JSON.stringify({ id: subject, verificationMethod: methods });
    const parse = (text: string) => controllerKeysFromDidDocument(JSON.parse(text), subject);
    await expectLinear("did.json quotes", parse, doc([{ blockchainAccountId: letters }]), doc([{ blockchainAccountId: innerQuotes }]));
    const methods = Array.from({ length: SIZE / 78 }, (_, i) => ({ blockchainAccountId: `eip155:1:0x${i.toString(16).padStart(40, "0")}` }));
    await expectLinear("did.json many methods", parse, doc([{ blockchainAccountId: letters }]), doc(methods));
  });

  test("did.json: duplicate keys, distinct keys and deep nesting within 64 KiB", async () => {
    const subject = "did:web:svc.example";
    const parse = (text: string) => controllerKeysFromDidDocument(JSON.parse(text), subject);
    const doc = (entry: (i: number) => unknown) => {
      const methods: unknown[] = [];
      while (JSON.stringify(methods).length < SIZE) methods.push(entry(methods.length));
      return JSON.stringify({ id: subject, verificationMethod: methods });
    };
    const ec = (i: number) => ({
      kty: "EC",
      crv: "P-256",
      x: base64UrlEncode(Uint8Array.from({ length: 32 }, (_, k) => (i + k) & 0xff)),
      y: base64UrlEncode(Uint8Array.from({ length: 32 }, (_, k) => (i * 3 + k) & 0xff)),
    });
    const accounts = doc((i) => ({ blockchainAccountId: `eip155:1:0x${i.toString(16).padStart(40, "0")}`, pad: "p".repeat(100) }));
    // 63 distinct keys, then the last one again and again with a different kid: each compared with all 63 before.
    const duplicates = doc((i) => ({ publicKeyJwk: { ...ec(Math.min(i, 62)), kid: String(i) } }));
    await expectLinear("did.json duplicate did:jwk keys", parse, accounts, duplicates);
    const rsa = doc((i) => ({ publicKeyJwk: { kty: "RSA", e: "AQAB", n: base64UrlEncode(Uint8Array.from({ length: 512 }, (_, k) => (i * 131 + k) & 0xff)) } }));
    await expectLinear("did.json distinct RSA keys", parse, accounts, rsa);
    const depth = (SIZE - 100) / 2;
    const nested = JSON.stringify({ id: subject, verificationMethod: [{ publicKeyJwk: { ...ec(1), ext: "NESTED" } }] })
      .replace('"NESTED"', `${"[".repeat(depth)}${"]".repeat(depth)}`);
    await expectLinear("did.json deep nesting", parse, accounts.slice(0, nested.length), nested);
    // A JWK Set: every key is read (no cap on their number), as many distinct small keys as fit 64 KiB.
    const jwks = (text: string) => controllerKeysFromJwks(JSON.parse(text));
    const okp = (i: number) => ({ kty: "OKP", crv: "Ed25519", x: base64UrlEncode(Uint8Array.from({ length: 32 }, (_, k) => (k < 4 ? i >>> (8 * k) : k) & 0xff)) });
    const set = (entry: (i: number) => unknown) => {
      const keys: unknown[] = [];
      while (JSON.stringify(keys).length < SIZE) keys.push(entry(keys.length));
      return JSON.stringify({ keys });
    };
    await expectLinear("jwks distinct keys", jwks, set((i) => ({ ...okp(0), pad: `${i}${"p".repeat(600)}` })), set(okp));
  });

  test("merging controller keys of two TXT names and a did.json: no pairwise comparison", async () => {
    const keys = Array.from({ length: 192 }, (_, i) => rsaDidJwk(i));
    const same = Array.from({ length: 192 }, () => keys[0]!);
    const merge = (text: string) => {
      const set = createKeySet();
      for (const key of text.split(" ")) set.add(key, "dns-txt");
      return set.sorted();
    };
    await expectLinear("key set of distinct did:jwk keys", merge, same.join(" "), keys.join(" "));
  });

  test("a whole discovery and controller confirm over the largest answers", async () => {
    const subject = "did:web:svc.example";
    const answer = (entry: (i: number) => string) => {
      // Several records per name, each as long as the rest of a 64 KiB message allows.
      const records = [fill(SIZE / 2, ";", entry), fill(SIZE / 2, ";", (i) => entry(i + 1000))];
      return { status: "found" as const, records: records.map((r) => `v=1;${r}`) };
    };
    const document = (entry: (i: number) => unknown) => {
      const methods: unknown[] = [];
      while (JSON.stringify(methods).length < SIZE) methods.push(entry(methods.length));
      return { status: "ok" as const, url: "https://svc.example/.well-known/did.json", document: { id: subject, verificationMethod: methods } };
    };
    const anchors: TrustAnchors = { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] };
    // Every key of a source counts (decisions §8, no cap on their number): besides the costliest keys (RSA did:jwk),
    // the most keys that fit, each the shortest CAIP-10 account id (`a:b:<n>`, about 3,900 per TXT name and 2,000 in
    // the did.json). Each must cost no more than a bounded multiple of as many bytes of a few long keys.
    const run = (kind: string) => {
      const adversarial = kind === "adversarial";
      const tiny = kind === "tiny";
      const txtKey = (i: number) => `controller=${tiny ? `a:b:${i.toString(36)}` : adversarial ? rsaDidJwk(i) : pkhLike(i, 962)}`;
      const discover = createDiscoverControllers({
        dns: fakeDnsResolver({ "_controllers.svc.example": answer(txtKey), "_omatrust.svc.example": answer((i) => txtKey(i + 5000)) }),
        didDocuments: fakeDidDocumentFetcher({
          "svc.example": document((i) => adversarial
            ? { publicKeyJwk: { kty: "RSA", e: "AQAB", n: base64UrlEncode(Uint8Array.from({ length: 512 }, (_, k) => (i * 17 + k) & 0xff)) } }
            : tiny ? { blockchainAccountId: `a:b:z${i.toString(36)}` }
            : { blockchainAccountId: `eip155:1:0x${(i + 9000).toString(16).padStart(40, "0")}`, pad: "p".repeat(650) }),
        }),
        serviceDnsLabel: "omatrust",
      });
      return { discover, confirm: createControllerConfirm({ discover, trustAnchors: anchors, clock: fakeClock(), registryUrl: "https://ats.test/v1/trust-anchors" }) };
    };
    const benign = run("benign");
    const adversarial = run("adversarial");
    const tiny = run("tiny");
    const wallet = "did:pkh:eip155:1:0x0000000000000000000000000000000000000001";
    const confirm = (kind: string) => (kind === "adversarial" ? adversarial : kind === "tiny       " ? tiny : benign).confirm(subject, wallet);
    // Same text length on both sides: the labels name which side runs.
    await expectLinear("discovery and confirm", confirm, "benign".padEnd(11), "adversarial");
    await expectLinear("discovery and confirm of the most keys", confirm, "benign".padEnd(11), "tiny".padEnd(11));
    const record = await adversarial.confirm(subject, wallet);
    // About 60 keys from each TXT name, over 80 from the did.json, and the wallet.
    expect(record.ok && record.value.controllerKeys.length).toBeGreaterThan(180);
    const most = await tiny.confirm(subject, wallet);
    expect(most.ok && most.value.controllerKeys.length).toBeGreaterThan(5_000);
  });

  test("DIDs: normalization, did:web locations, CAIP-10, artifact DIDs, did:key, controller comparison", async () => {
    await expectLinear("normalizeDid percent", normalizeDid, `did:web:${letters}`, `did:web:${"%3A".repeat(SIZE / 3)}`);
    await expectLinear("normalizeDid colons", normalizeDid, `did:web:${letters}`, `did:web:${":".repeat(SIZE)}`);
    await expectLinear("normalizeDid hashes", normalizeDid, `did:web:${letters}`, `did:web:${"#".repeat(SIZE)}`);
    await expectLinear("normalizeDid did:jwk", normalizeDid, `did:web:${letters}`, `did:jwk:${"A".repeat(SIZE)}`);
    await expectLinear("didWebLocation", didWebLocation, `did:web:${letters}`, `did:web:${"%3a".repeat(SIZE / 3)}`);
    await expectLinear("didWebLocation ports", didWebLocation, `did:web:${letters}`, `did:web:${"%3a1".repeat(SIZE / 4)}`);
    await expectLinear("caip10", buildDidPkhFromCaip10, `eip155:1:${letters}`, `${"a".repeat(SIZE / 2)}${"-".repeat(SIZE / 2)}`);
    await expectLinear("artifact", parseArtifactDid, `did:artifact:b${letters}`, `did:artifact:${"b".repeat(SIZE)}`);
    await expectLinear("did:key", didKeyToJwk, `did:key:${letters}`, `did:key:z${"z".repeat(SIZE)}`);
    await expectLinear("same controller", (t) => isSameControllerId(t, t), `did:pkh:eip155:1:${letters}`, `did:pkh:eip155:1:${quotes}`);
  });

  test("client text: SIWE messages, identity resolve, proofs, JWS, receipts, resource URLs", async () => {
    const siwe = (line: string, tail = "") => `app.test wants you to sign in with your Ethereum account:\n0x0000000000000000000000000000000000000001\n\n${line}\n\nURI: https://app.test\nVersion: 1\nChain ID: 1\nNonce: abcdefgh\nIssued At: 2026-01-01T00:00:00Z${tail}`;
    await expectLinear("siwe statement", parseSiweMessage, siwe(letters), siwe("\n".repeat(SIZE)));
    await expectLinear("siwe colons", parseSiweMessage, siwe(letters), siwe(": ".repeat(SIZE / 2)));
    await expectLinear("siwe resources", parseSiweMessage, siwe(letters), siwe("statement", `\nResources:${"\n- a:b".repeat(SIZE / 6)}`));
    await expectLinear("identity", resolveIdentity, letters, `did:pkh:eip155:${":".repeat(SIZE)}`);
    await expectLinear("identity quotes", resolveIdentity, letters, quotes);
    await expectLinear("identity did:jwk", resolveIdentity, letters, `did:jwk:${base64UrlEncode(new TextEncoder().encode(`${"[".repeat((SIZE * 3) / 8)}${"]".repeat((SIZE * 3) / 8)}`))}`);
    await expectLinear("proofs", (t) => parseProofWrappers([t]), JSON.stringify({ proofType: letters }), "{".repeat(SIZE / 2) + "}".repeat(SIZE / 2));
    const third = "a".repeat(SIZE / 3);
    await expectLinear("jws", decodeCompactJws, `${third}.${third}.${third}`, ".".repeat(SIZE));
    const b64 = (text: string) => base64UrlEncode(new TextEncoder().encode(text));
    const header = b64(JSON.stringify({ alg: "ES256", kid: "did:jwk:x" }));
    const flat = b64(JSON.stringify({ pad: "a".repeat(SIZE / 2) }));
    const deep = b64(`{"version":1,"pad":${"[".repeat(SIZE / 4)}${"]".repeat(SIZE / 4)}}`);
    const receipt = (payload: string) => JSON.stringify({ format: "jws", signature: `${header}.${payload}.AAAA` });
    await expectLinear("jws receipt payload", (t) => readReceiptPayload(JSON.parse(t)), receipt(flat), receipt(deep));
    await expectLinear("resource url", resourceUrlToDidWeb, `https://svc.example/${letters}`, `https://${"%".repeat(SIZE)}`);
  });
});
