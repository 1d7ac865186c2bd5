import { describe, expect, test } from "bun:test";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { policyAllowlists, trustPolicyOf } from "./trust_policy.ts";
import { validateTrustAnchors } from "./trust_anchors.ts";

const UID_A = `0x${"a".repeat(64)}`;
const UID_B = `0x${"b".repeat(64)}`;
const anchors: TrustAnchors = {
  version: 3,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: ["https://widgets.example", "https://ats.example"],
  chains: {
    "eip155:31337": { name: "ATS Devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: { "user-review": UID_A, "linked-identifier": UID_B, alias: UID_A } },
    "eip155:66238": { name: "OMAchain Testnet", easContract: "0x8835AF90f1537777F52E482C8630cE4e947eCa32", schemas: {} },
  },
  registries: [],
};

describe("trustPolicyOf", () => {
  test("chains keyed by decimal id with schema UIDs as an array, origins first the service's, each once", () => {
    expect(trustPolicyOf(anchors, ["https://ats.example"])).toEqual({
      version: 3,
      updatedAt: "2026-01-01T00:00:00Z",
      widgetOrigins: ["https://ats.example", "https://widgets.example"],
      chains: {
        "31337": { name: "ATS Devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: [UID_A, UID_B] },
        "66238": { name: "OMAchain Testnet", easContract: "0x8835AF90f1537777F52E482C8630cE4e947eCa32", schemas: [] },
      },
    });
  });

  test("the allowlists the reference SDK extracts: every contract and schema, lowercase, each once", () => {
    expect(policyAllowlists(trustPolicyOf(anchors, []))).toEqual({
      allowedContracts: ["0x5fbdb2315678afecb367f032d93f642f64180aa3", "0x8835af90f1537777f52e482c8630ce4e947eca32"],
      allowedSchemas: [UID_A, UID_B],
    });
  });
});

describe("validateTrustAnchors(): the file's widgetOrigins", () => {
  test("are held to WIDGET_ORIGINS' rule: a trailing slash or upper case is published as a browser writes event.origin; null, *, a path or a user is refused naming the entry", () => {
    // Found by attack: the file's origins were served as written, so "null" reached /v1/trust-policy, where a host on the
    // reference's bridge (string comparison) would take a sandboxed frame's messages, and https://cdn.example/ never matched.
    const withOrigins = (widgetOrigins: string[]) => validateTrustAnchors({ ...anchors, widgetOrigins });
    expect(withOrigins(["https://CDN.example/", "http://w.example:80", "https://w.example:8443"])).toMatchObject({
      ok: true,
      value: { widgetOrigins: ["https://cdn.example", "http://w.example", "https://w.example:8443"] },
    });
    for (const [i, bad] of [[0, "null"], [0, "*"], [1, "https://cdn.example/widgets"], [1, "https://u@cdn.example"], [1, "https://cdn.example/?a"]] as const) {
      const origins = i === 0 ? [bad] : ["https://ok.example", bad];
      expect(withOrigins(origins)).toEqual({
        ok: false,
        code: "INVALID_INPUT",
        message: `Trust anchors /widgetOrigins/${i}: expected an origin such as https://cdn.example (scheme, host and port only), got "${bad}"`,
      });
    }
  });
});
