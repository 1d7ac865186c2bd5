/**
 * Routing and the app's guards see one and the same path whatever the `Host` (issue 15): raw HTTP/1.1 over a
 * TCP socket (fetch would normalize the Host) with hosts of 1 to 3 characters and absolute-form targets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => await stack?.stop());

/** Sends one raw request and returns the status code and the body. */
function raw(lines: string[], body = ""): Promise<{ status: number; body: string }> {
  const { port } = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("utf8")));
    socket.on("error", reject);
    socket.on("end", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
    const head = [...lines, "Connection: close", ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []), "", ""].join("\r\n");
    // Written, not ended: a half-closed socket lets the server drop a request still being answered.
    socket.write(head + body);
  });
}

describe("short Host headers and absolute-form targets", () => {
  for (const host of ["a", "ab", "abc", "abcd"]) {
    test(`Host: ${host} routes the same paths as a normal Host`, async () => {
      expect((await raw(["GET /v1/trust-anchors HTTP/1.1", `Host: ${host}`])).status).toBe(200);
      expect((await raw(["GET /healthz HTTP/1.1", `Host: ${host}`])).status).toBe(200);
      expect((await raw(["GET /v1/nonce?attester=0x0000000000000000000000000000000000000001 HTTP/1.1", `Host: ${host}`])).status).toBe(200);
    });

    test(`Host: ${host}: a cross-origin text/plain POST to an unknown path passes no guard and writes nothing`, async () => {
      for (const path of ["/xx/v1/session/logout", "/xx/v1/controller-witness", "/x/v1/controller-witness"]) {
        const answer = await raw([
          `POST ${path} HTTP/1.1`,
          `Host: ${host}`,
          "Origin: https://evil.test",
          "Content-Type: text/plain",
        ], '{"subjectDid":"did:web:a.test","controllerDid":"did:pkh:eip155:1:0x0000000000000000000000000000000000000001"}');
        expect([path, answer.status]).toEqual([path, 404]);
        expect(JSON.parse(answer.body)).toMatchObject({ code: "NOT_FOUND" });
      }
    });
  }

  test("an absolute-form target naming a short host is routed by its path", async () => {
    expect((await raw(["GET http://a/v1/trust-anchors HTTP/1.1", "Host: a"])).status).toBe(200);
    const witness = await raw(["POST http://a/xx/v1/controller-witness HTTP/1.1", "Host: a", "Origin: https://evil.test", "Content-Type: text/plain"], "{}");
    expect(witness.status).toBe(404);
  });
});
