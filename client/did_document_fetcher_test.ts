import { afterAll, describe, expect, test } from "bun:test";
import { createFetchDidDocumentFetcher } from "./x402_verify.ts";

/** A server on this machine: what a receipt naming `did:web:localhost%3A<port>` would make a verifier fetch. */
const asked: string[] = [];
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(request) {
    asked.push(new URL(request.url).pathname);
    if (new URL(request.url).pathname === "/big/did.json") return new Response(`{"pad":"${"x".repeat(200_000)}"}`);
    return Response.json({ id: "did:web:localhost" });
  },
});
afterAll(() => server.stop(true));

describe("createFetchDidDocumentFetcher(): the default did.json fetcher of the verifiers", () => {
  test("loopback names are never fetched unless allowed: a kid is whatever a receipt on chain says", async () => {
    const fetcher = createFetchDidDocumentFetcher();
    for (const host of [`localhost:${server.port}`, `app.localhost:${server.port}`, `127.0.0.1:${server.port}`, `127.1.2.3:${server.port}`]) {
      expect((await fetcher.fetchDidDocument(host, ["admin", "reset"])).status).toBe("unavailable");
    }
    expect(asked).toEqual([]);
    const allowed = createFetchDidDocumentFetcher({ allowLoopback: true });
    expect(await allowed.fetchDidDocument(`localhost:${server.port}`)).toMatchObject({ status: "ok", document: { id: "did:web:localhost" } });
    expect(asked).toEqual(["/.well-known/did.json"]);
  });

  test("a document past 64 KiB is refused without reading it whole", async () => {
    const allowed = createFetchDidDocumentFetcher({ allowLoopback: true });
    expect(await allowed.fetchDidDocument(`localhost:${server.port}`, ["big"])).toMatchObject({ status: "unavailable", reason: "too-large" });
  });
});
