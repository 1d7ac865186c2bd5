/**
 * Attestation data whose ABI offsets read one part twice, on the real chain through the public reads. 33 KB of
 * `user-review` data whose thousand `proofs` offsets all name one 1 KB string decoded into a thousand strings: about
 * 6 MB of JSON an answer, never kept (over the answer cache's bound), so recomputed at every read; twenty of them
 * took one list request to 800 MB of RSS. Such data is now answered as undecodable (`data: {}`), as the list documents.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { easWriter } from "./support/eas_writer.ts";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
let writer: ReturnType<typeof easWriter>;

beforeAll(async () => {
  stack = await startStack({});
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress as Hex });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

/** `user-review` data (string subject, uint8 rating, string text, string[] tags, string[] proofs…) with shared offsets. */
function sharedOffsets(count: number, length: number): Hex {
  const word = (n: number) => n.toString(16).padStart(64, "0");
  // Head: six words; then an empty `tags` array, then `proofs` (its length, `count` offsets), then the one string.
  const head = 6 * 32, tags = head, proofs = tags + 32, text = proofs + 32 + count * 32;
  const body = "01".repeat(length).padEnd(Math.ceil(length / 32) * 64, "0");
  return `0x${word(text)}${word(text)}${word(5)}${word(text)}${word(tags)}${word(proofs)}${word(0)}${word(count)}${
    word(text - (proofs + 32)).repeat(count)
  }${word(length)}${body}`;
}

describe("data whose offsets read one part twice", () => {
  test("is answered as undecodable by uid and in the list, in an answer of its own size", async () => {
    const key = stack.devnet.keys.users[6] as Hex;
    const attester = privateKeyToAccount(key).address;
    const data = sharedOffsets(1_000, 1_000);
    expect((data.length - 2) / 2).toBeLessThan(40_000);
    const { uid } = await writer.attest(key, stack.devnet.schemaUids["user-review"] as Hex, { recipient: attester, data, revocable: false });
    await stack.sync();

    const one = await fetch(`${stack.baseUrl}/v1/attestations/${uid}`);
    const text = await one.text();
    expect(one.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ attestation: { uid, schemaName: "user-review", data: {} } });
    expect(text.length).toBeLessThan(data.length);
    const list = await fetch(`${stack.baseUrl}/v1/attestations?attester=${attester}`);
    const page = await list.json() as { items: { attestation: { uid: string; data: unknown } }[] };
    expect(page.items.map((i) => [i.attestation.uid, i.attestation.data])).toEqual([[uid, {}]]);
  }, 120_000);
});
