import { describe, expect, test } from "bun:test";
import type { HexString } from "../ports/eas.ts";
import type { OwnershipChain, OwnershipTransaction } from "../ports/ownership_chain.ts";
import type { DiscoverControllers } from "./controller_discovery.ts";
import { createSubjectOwnership, OWNERSHIP_TRANSFERRED_TOPIC } from "./subject_ownership.ts";

const WALLET = "0x00000000000000000000000000000000000000aa" as HexString;
const OTHER = "0x00000000000000000000000000000000000000bb" as HexString;
const CONTRACT = "0x00000000000000000000000000000000000000cc" as HexString;
const pkh = (a: string, chain = 31337) => `did:pkh:eip155:${chain}:${a}`;
const TX = `0x${"1".repeat(64)}` as HexString;

function setup(options: { owner?: HexString | null; tx?: OwnershipTransaction | null; down?: boolean; discovery?: Awaited<ReturnType<DiscoverControllers>> } = {}) {
  const chain: OwnershipChain = {
    chainId: 31337,
    hasCode: (a) => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: a === CONTRACT }),
    owner: () => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: options.owner === undefined ? WALLET : options.owner }),
    transaction: () => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: options.tx ?? null }),
  };
  const discover: DiscoverControllers = () => Promise.resolve(options.discovery ?? { ok: false, code: "INVALID_DID", message: "x" } as never);
  return createSubjectOwnership({ discover, chain });
}

describe("createSubjectOwnership()", () => {
  test("the wallet itself and a contract it owns are verified; another chain or an account without code fails", async () => {
    expect(await setup()({ subjectDid: pkh(WALLET, 1), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { method: "wallet" } });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: true, method: "contract" } });
    expect(await setup()({ subjectDid: pkh(CONTRACT, 1), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: false, status: "failed" } });
    expect(await setup()({ subjectDid: pkh(OTHER), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: false } });
  });

  test("creation and transfer transactions: verified for the wallet, failed for another; a transfer that moved on fails", async () => {
    const created = { from: WALLET, contractAddress: CONTRACT, logs: [] };
    expect(await setup({ owner: OTHER, tx: created })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: true, method: "minting-wallet" } });
    expect(await setup({ owner: OTHER, tx: { ...created, from: OTHER } })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: false, method: "minting-wallet" } });
    const transfer = { from: OTHER, contractAddress: null, logs: [{ address: CONTRACT, topics: [OWNERSHIP_TRANSFERRED_TOPIC, `0x${"0".repeat(24)}${OTHER.slice(2)}`, `0x${"0".repeat(24)}${WALLET.slice(2)}`] as HexString[] }] };
    expect(await setup({ owner: WALLET, tx: transfer })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: true, method: "transfer" } });
    expect(await setup({ owner: OTHER, tx: transfer })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: false, method: "transfer" } });
  });

  test("a lookup that cannot be made is NETWORK_ERROR; bad input is INVALID_DID / INVALID_INPUT", async () => {
    expect(await setup({ down: true })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await setup()({ subjectDid: "nope:", connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: "did:web:a.test" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: "0x1" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});
