import { describe, expect, test } from "bun:test";
import { writeReview } from "./api.ts";
import { isAtsClientError } from "./errors.ts";

describe("writeReview() (the console's review form)", () => {
  const contract = "0x2222222222222222222222222222222222222222";
  const txHash = `0x${"cd".repeat(32)}`;

  test("a transaction on another chain than a did:pkh subject's is refused with the chain rule's reason, nothing fetched or signed (issue 33)", async () => {
    const calls: string[] = [];
    const fetch = ((url: string) => (calls.push(`fetch ${url}`), Promise.reject(new Error("not expected")))) as unknown as typeof globalThis.fetch;
    const sign = () => (calls.push("sign"), Promise.resolve(`0x${"00".repeat(65)}` as const));
    const written = writeReview({
      subject: `did:pkh:eip155:1:${contract}`,
      ratingValue: 4,
      transaction: { chainId: 31337, txHash },
      attester: "0x1111111111111111111111111111111111111111",
      sign,
    }, { baseUrl: "http://ats.test", fetch });
    const error = await written.then(() => undefined, (e: unknown) => e);
    expect(isAtsClientError(error) ? [error.code, error.message] : error).toEqual([
      "INVALID_INPUT",
      `proofs: the transaction is on eip155:31337, not on did:pkh:eip155:1:${contract}'s chain eip155:1`,
    ]);
    expect(calls).toEqual([]);
  });
});
