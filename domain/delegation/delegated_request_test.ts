import { describe, expect, test } from "bun:test";
import { delegatedRequestOf, parseDelegatedRequest } from "./delegated_request.ts";

const body = {
  attester: "0x173a347faed486bb69081ef673c6e52c03f57f3e",
  signature: `0x${"11".repeat(65)}`,
  prepared: { delegatedRequest: { schema: `0x${"ab".repeat(32)}`, deadline: "2000000000", nonce: "3" } },
};

describe("delegatedRequestOf() (issue 47 item 2: a body is read once)", () => {
  test("a request the parser read is taken as it is, not read again", () => {
    const read = parseDelegatedRequest(body);
    if (!read.ok) throw new Error(read.message);
    const again = delegatedRequestOf(read.value);
    expect(again.ok && again.value).toBe(read.value);
    expect(read.value).toMatchObject({ schema: `0x${"ab".repeat(32)}`, deadline: 2_000_000_000n, clientNonce: 3n, revocable: true });
  });

  test("a body as sent is read; a look-alike of a read request is read as a body, so it cannot slip past the parser", () => {
    const read = delegatedRequestOf(body);
    expect(read.ok).toBe(true);
    const lookAlike = delegatedRequestOf({ ...(read.ok ? read.value : {}) });
    expect(lookAlike).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});
