import { describe, expect, test } from "bun:test";
import { keccak256, parseTransaction, recoverTransactionAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { HexString } from "../../ports/eas.ts";
import { nobleSecp256k1, openKeccak256, openNativeSecp256k1 } from "../crypto/mod.ts";
import { privateKeyBytes, signEip1559 } from "./eip1559.ts";

const native = openNativeSecp256k1();
const wasmKeccak = await openKeccak256();

describe("signEip1559", () => {
  const cases = [
    { chainId: 31337, nonce: 0, maxPriorityFeePerGas: 0n, maxFeePerGas: 1n, gas: 21_000n, value: 0n, data: "0x" },
    { chainId: 66238, nonce: 1, maxPriorityFeePerGas: 1_000_000_000n, maxFeePerGas: 3_000_000_000n, gas: 300_000n, value: 0n, data: `0x${"ab".repeat(1_200)}` },
    { chainId: 1, nonce: 127, maxPriorityFeePerGas: 127n, maxFeePerGas: 128n, gas: 55n, value: 1n, data: "0x00" },
    { chainId: 8453, nonce: 1_000_000, maxPriorityFeePerGas: 10n ** 30n, maxFeePerGas: (1n << 256n) - 1n, gas: 30_000_000n, value: 10n ** 18n, data: "0x7f" },
    { chainId: 84532, nonce: 65_536, maxPriorityFeePerGas: 1n, maxFeePerGas: 2n, gas: 1_000_000n, value: 0n, data: `0x${"00".repeat(55)}` },
  ] as const;

  test("gives viem's raw bytes and hash, for nonces, fees and calldata of every length class (both signers)", async () => {
    const signers = [nobleSecp256k1, ...(native === undefined ? [] : [native])];
    for (let i = 0; i < 3 * signers.length; i++) {
      const secp = signers[i % signers.length]!;
      const key = generatePrivateKey();
      const account = privateKeyToAccount(key);
      for (const c of cases) {
        const to = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as HexString;
        // Every other signature hashes with the WebAssembly keccak, as the service does.
        const ours = signEip1559({ ...c, to, data: c.data as HexString }, privateKeyBytes(key), secp.sign, i % 2 === 0 ? wasmKeccak.bytes : undefined);
        const viems = await account.signTransaction({ type: "eip1559", ...c, to, data: c.data as HexString });
        expect(ours.raw).toBe(viems);
        expect(ours.txHash).toBe(keccak256(viems));
        expect(await recoverTransactionAddress({ serializedTransaction: ours.raw as `0x02${string}` })).toBe(account.address);
        expect(parseTransaction(ours.raw).nonce).toBe(c.nonce);
      }
    }
  });

  test("refuses a key or calldata that is not hex bytes", () => {
    expect(() => privateKeyBytes("0x1234")).toThrow();
    const key = privateKeyBytes(generatePrivateKey());
    const tx = { chainId: 1, nonce: 0, maxPriorityFeePerGas: 0n, maxFeePerGas: 1n, gas: 21_000n, value: 0n, to: `0x${"1".repeat(40)}` as HexString };
    expect(() => signEip1559({ ...tx, data: "0xabc" as HexString }, key)).toThrow();
  });
});
