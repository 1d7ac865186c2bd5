import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { createControllerConfirm } from "./controller_confirm.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";

const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";

describe("createControllerConfirm()", () => {
  const anchors = (issuers: TrustAnchors["registries"][number]["issuers"]): TrustAnchors => ({
    version: 1,
    updatedAt: "",
    widgetOrigins: [],
    chains: {},
    registries: [{ type: "approved-issuers", issuers }],
  });
  const discover = createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });

  test("adds the wallet as an account-wallet key and checks the registry", async () => {
    const confirm = createControllerConfirm({
      discover,
      trustAnchors: anchors([{ address: A, label: "Issuer", schemas: ["controller-witness"], status: "active", validFrom: "2020-01-01T00:00:00Z" }]),
      clock: fakeClock(),
      registryUrl: "http://svc/v1/trust-anchors",
    });
    const approved = await confirm("did:web:x.com", `did:pkh:eip155:66238:${A}`);
    expect(approved.ok && approved.value.approvedIssuer).toEqual({
      status: "approved",
      checkedIdentifiers: [`did:pkh:eip155:66238:${A}`],
      registryUrl: "http://svc/v1/trust-anchors",
    });
    expect(approved.ok && approved.value.evidence[0]).toEqual({
      kind: "account-wallet", status: "found", location: "request.walletDid", keys: [`did:pkh:eip155:66238:${A}`],
    });
    expect(approved.ok && approved.value.controllerKeys[0]).toMatchObject({ sources: ["account-wallet"], basic: false });
    const other = await confirm("did:web:x.com", `did:pkh:eip155:66238:${B}`);
    expect(other.ok && other.value.approvedIssuer.status).toBe("not-approved");
  });

  test("no wallet or no registry is not-configured; a revoked issuer is not approved", async () => {
    const confirm = createControllerConfirm({ discover, trustAnchors: anchors([]), clock: fakeClock(), registryUrl: "u" });
    expect((await confirm("did:web:x.com", undefined)).ok && (await confirm("did:web:x.com", undefined))).toMatchObject({
      value: { approvedIssuer: { status: "not-configured", checkedIdentifiers: [], registryUrl: null } },
    });
    const revoked = createControllerConfirm({
      discover,
      trustAnchors: anchors([{ address: A, label: "", schemas: [], status: "revoked", revokedAt: "2001-01-01T00:00:00Z" }]),
      clock: fakeClock(),
      registryUrl: "u",
    });
    const r = await revoked("did:web:x.com", A);
    expect(r.ok && r.value.approvedIssuer.status).toBe("not-approved");
  });

  test("the rule every verdict uses: a did:pkh entry on its own chain only, an active status only", async () => {
    const confirmWith = (issuers: TrustAnchors["registries"][number]["issuers"]) =>
      createControllerConfirm({ discover, trustAnchors: anchors(issuers), clock: fakeClock(), registryUrl: "u" });
    const onChain = confirmWith([{ address: `did:pkh:eip155:31337:${A}`, label: "", schemas: ["controller-witness"], status: "active" }]);
    expect((await onChain("did:web:x.com", `did:pkh:eip155:31337:${A}`)) as unknown).toMatchObject({ value: { approvedIssuer: { status: "approved" } } });
    // Before, "approved": the address matched on any chain.
    expect((await onChain("did:web:x.com", `did:pkh:eip155:999:${A}`)) as unknown).toMatchObject({ value: { approvedIssuer: { status: "not-approved" } } });
    // Before, "approved": any status with a revokedAt still ahead.
    const suspended = confirmWith([{ address: A, label: "", schemas: ["controller-witness"], status: "suspended" as never, revokedAt: "2999-01-01T00:00:00Z" }]);
    expect((await suspended("did:web:x.com", `did:pkh:eip155:1:${A}`)) as unknown).toMatchObject({ value: { approvedIssuer: { status: "not-approved" } } });
  });
});
