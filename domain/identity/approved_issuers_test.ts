import { describe, expect, test } from "bun:test";
import type { TrustAnchors, TrustedIssuer } from "../../ports/trust_anchors.ts";
import { findApprovedIssuer, isListedIssuer } from "./mod.ts";

const ISSUER = "0xA000000000000000000000000000000000000001";
const at = (iso: string) => Date.parse(iso);
const BEFORE = at("2026-05-15T00:00:00Z");
const AFTER = at("2026-07-01T00:00:00Z");

/** Anchors listing one issuer of `security-assessment` with the given status and dates. */
function anchorsWith(entry: Partial<TrustedIssuer> & Record<string, unknown>): TrustAnchors {
  return {
    version: 1,
    updatedAt: "2026-01-01T00:00:00Z",
    widgetOrigins: [],
    chains: {},
    registries: [{ type: "approved-issuers", issuers: [{ address: ISSUER, label: "Audit Co", schemas: ["security-assessment"], ...entry } as TrustedIssuer] }],
  };
}
const approved = (anchors: TrustAnchors, atMs: number) => findApprovedIssuer(anchors, ISSUER, "security-assessment", atMs) !== undefined;

describe("the approved-issuer rule", () => {
  test("status revoked never counts, not even for attestations made before a later revokedAt", () => {
    const compromised = anchorsWith({ status: "revoked", validFrom: "2026-05-01T00:00:00Z", revokedAt: "2026-06-01T00:00:00Z" });
    // Before, approved: a revokedAt still ahead of the attestation let a revoked issuer count.
    expect(approved(compromised, BEFORE)).toBe(false);
    expect(approved(compromised, AFTER)).toBe(false);
    expect(isListedIssuer(compromised, ISSUER, BEFORE)).toBe(false);
    expect(approved(anchorsWith({ status: "revoked" }), BEFORE)).toBe(false);
  });

  test("an active issuer with revokedAt counts for attestations before it, not at or after it", () => {
    const retiring = anchorsWith({ status: "active", validFrom: "2026-05-01T00:00:00Z", revokedAt: "2026-06-01T00:00:00Z" });
    expect(approved(retiring, BEFORE)).toBe(true);
    expect(approved(retiring, at("2026-06-01T00:00:00Z"))).toBe(false);
    expect(approved(retiring, AFTER)).toBe(false);
    expect(approved(retiring, at("2026-04-30T23:59:59Z"))).toBe(false);
  });

  test("a missing status counts as active, a missing validFrom sets no lower bound", () => {
    expect(approved(anchorsWith({}), at("2001-01-01T00:00:00Z"))).toBe(true);
    expect(approved(anchorsWith({ revokedAt: "2026-06-01T00:00:00Z" }), BEFORE)).toBe(true);
    expect(approved(anchorsWith({ revokedAt: "2026-06-01T00:00:00Z" }), AFTER)).toBe(false);
  });

  test("any other status (suspended) never counts; an unparseable date excludes", () => {
    expect(approved(anchorsWith({ status: "suspended" as never }), BEFORE)).toBe(false);
    expect(approved(anchorsWith({ status: "suspended" as never, revokedAt: "2999-01-01T00:00:00Z" }), BEFORE)).toBe(false);
    expect(approved(anchorsWith({ status: "active", validFrom: "soon" }), BEFORE)).toBe(false);
    expect(approved(anchorsWith({ status: "active", revokedAt: "never" }), BEFORE)).toBe(false);
  });
});
