/**
 * Every parser of remote or client text stays linear (issue 15): each is fed the worst input we know at the
 * largest size it can receive, and must take no longer than a bounded multiple of a benign input of the same
 * size, timed in the same run (a relative budget: machines here are noisy, an absolute time means little).
 * Before the fix, 60,000 `"` inside a TXT `controller=` value took 2.5 s in the quote trimming, against about a
 * millisecond for as many letters.
 */
import { describe, expect, test } from "bun:test";
import { canonicalControllerKey, controllerKeysFromDidDocument, didWebLocation, parseControllerTxtRecord } from "./controller_discovery.ts";
import { buildDidPkhFromCaip10, isSameControllerId, normalizeDid, parseArtifactDid } from "./did.ts";
import { resolveIdentity } from "./identity.ts";
import { parseProofWrappers } from "./proofs.ts";
import { parseSiweMessage } from "./siwe.ts";
import { decodeCompactJws, resourceUrlToDidWeb } from "./x402_payloads.ts";

/** Size of the largest remote text: a TXT answer fits a 64 KiB DNS message; did.json is capped at 64 KiB. */
const SIZE = 60_000;

/** The best of a few runs, in milliseconds. */
function best(run: () => unknown): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    run();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

/** Adversarial input must cost at most 20 times a benign one of the same size, with 50 ms of slack for tiny times. */
function expectLinear(name: string, parse: (input: string) => unknown, benign: string, adversarial: string) {
  expect(adversarial.length).toBeGreaterThanOrEqual(benign.length * 0.9);
  const base = best(() => parse(benign));
  const worst = best(() => parse(adversarial));
  expect({ name, withinBudget: worst <= Math.max(20 * base, base + 50) }).toEqual({ name, withinBudget: true });
}

const quotes = '"'.repeat(SIZE);
/** Quotes inside the value: what made `/^"+|"+$/g` retry from every position (2.5 s for this size). */
const innerQuotes = `a${'"'.repeat(SIZE)}a`;
const letters = "a".repeat(SIZE);

describe("parsers of remote text are linear at their largest input", () => {
  test("controller keys: quotes, colons, percent signs", () => {
    expectLinear("canonicalControllerKey quotes", canonicalControllerKey, letters, quotes);
    expectLinear("canonicalControllerKey inner quotes", canonicalControllerKey, letters, innerQuotes);
    expectLinear("canonicalControllerKey quoted did", canonicalControllerKey, letters, `${'"'.repeat(SIZE / 2)}did:pkh:eip155:1:${'"'.repeat(SIZE / 2)}`);
    expectLinear("canonicalControllerKey colons", canonicalControllerKey, letters, "eip155:" + ":".repeat(SIZE));
  });

  test("TXT records: one huge value, many controllers, separators", () => {
    const many = Array.from({ length: SIZE / 60 }, (_, i) => `controller=did:pkh:eip155:1:0x${i.toString(16).padStart(40, "0")}`).join(";");
    expectLinear("txt quotes", parseControllerTxtRecord, `v=1;controller=${letters}`, `v=1;controller=${innerQuotes}`);
    expectLinear("txt many controllers", parseControllerTxtRecord, `v=1;controller=${letters}`, `v=1;${many}`);
    expectLinear("txt separators", parseControllerTxtRecord, letters, ";".repeat(SIZE / 2) + " ".repeat(SIZE / 2));
    expectLinear("txt equals", parseControllerTxtRecord, letters, "=".repeat(SIZE));
  });

  test("did.json: a quoted blockchainAccountId and as many verification methods as fit 64 KiB", () => {
    const subject = "did:web:svc.example";
    const doc = (methods: unknown[]) => JSON.stringify({ id: subject, verificationMethod: methods });
    const parse = (text: string) => controllerKeysFromDidDocument(JSON.parse(text), subject);
    expectLinear("did.json quotes", parse, doc([{ blockchainAccountId: letters }]), doc([{ blockchainAccountId: innerQuotes }]));
    const methods = Array.from({ length: SIZE / 78 }, (_, i) => ({ blockchainAccountId: `eip155:1:0x${i.toString(16).padStart(40, "0")}` }));
    expectLinear("did.json many methods", parse, doc([{ blockchainAccountId: letters }]), doc(methods));
  });

  test("DIDs: normalization, did:web locations, CAIP-10, artifact DIDs, controller comparison", () => {
    expectLinear("normalizeDid percent", normalizeDid, `did:web:${letters}`, `did:web:${"%3A".repeat(SIZE / 3)}`);
    expectLinear("normalizeDid colons", normalizeDid, `did:web:${letters}`, `did:web:${":".repeat(SIZE)}`);
    expectLinear("normalizeDid hashes", normalizeDid, `did:web:${letters}`, `did:web:${"#".repeat(SIZE)}`);
    expectLinear("didWebLocation", didWebLocation, `did:web:${letters}`, `did:web:${"%3a".repeat(SIZE / 3)}`);
    expectLinear("caip10", buildDidPkhFromCaip10, `eip155:1:${letters}`, `${"a".repeat(SIZE / 2)}${"-".repeat(SIZE / 2)}`);
    expectLinear("artifact", parseArtifactDid, `did:artifact:b${letters}`, `did:artifact:${"b".repeat(SIZE)}`);
    expectLinear("same controller", (t) => isSameControllerId(t, t), `did:pkh:eip155:1:${letters}`, `did:pkh:eip155:1:${quotes}`);
  });

  test("client text: SIWE messages, identity resolve, proofs, JWS, resource URLs", () => {
    const siwe = (line: string) => `app.test wants you to sign in with your Ethereum account:\n0x0000000000000000000000000000000000000001\n\n${line}\n\nURI: https://app.test\nVersion: 1\nChain ID: 1\nNonce: abcdefgh\nIssued At: 2026-01-01T00:00:00Z`;
    expectLinear("siwe statement", parseSiweMessage, siwe(letters), siwe("\n".repeat(SIZE)));
    expectLinear("siwe colons", parseSiweMessage, siwe(letters), siwe(": ".repeat(SIZE / 2)));
    expectLinear("identity", resolveIdentity, letters, `did:pkh:eip155:${":".repeat(SIZE)}`);
    expectLinear("identity quotes", resolveIdentity, letters, quotes);
    expectLinear("proofs", (t) => parseProofWrappers([t]), JSON.stringify({ proofType: letters }), "{".repeat(SIZE / 2) + "}".repeat(SIZE / 2));
    const third = "a".repeat(SIZE / 3);
    expectLinear("jws", decodeCompactJws, `${third}.${third}.${third}`, ".".repeat(SIZE));
    expectLinear("resource url", resourceUrlToDidWeb, `https://svc.example/${letters}`, `https://${"%".repeat(SIZE)}`);
  });
});
