import { describe, expect, test } from "bun:test";
import {
  createAnswerCache,
  createIdentityResolve,
  createRecordCache,
  DEFAULT_ANSWER_CACHE_LIMITS,
  DEFAULT_CACHE_LIMITS,
  identityRoutes,
  type RecordCache,
} from "./routes/identity.ts";
import { MAX_IDENTIFIER_LENGTH } from "../domain/identity/mod.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import { buildOpenApi } from "./openapi.ts";

const app = identityRoutes();
async function resolve(body: unknown, path = "/v1/identity-resolve") {
  const res = await app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
  return { status: res.status, body: await res.json() };
}

describe("identity-resolve routes", () => {
  test("answers one record per input, in order, on all three paths", async () => {
    for (const path of ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"]) {
      const res = await resolve({ identifiers: ["did:web:Example.com", "did:handle:github:octocat"] }, path);
      expect(res.status).toBe(200);
      expect(res.body.identities).toHaveLength(2);
      expect(res.body.identities[0]).toMatchObject({ canonical: "did:web:example.com", label: "example.com", type: "did-web" });
      expect(res.body.identities[1]).toMatchObject({ label: "octocat (github)" });
    }
  });

  test.each([["with", undefined], ["without", null]] as const)("answers made one after another keep their own bytes, read in any order (the answer buffer is reused), %s the answer cache", async (_name, answers) => {
    const app = identityRoutes({ resolve: createIdentityResolve({ answers }) });
    const lists = [
      ["did:web:a.example", "did:handle:github:one"],
      Array.from({ length: 100 }, (_, i) => `did:web:service${i}.example.com`),
      [],
      // Larger than the reused buffer: 100 identifiers of 4,000 characters.
      Array.from({ length: 100 }, (_, i) => `did:web:${"x".repeat(3_990)}${i}`),
      ["0x0000000000000000000000000000000000000001"],
    ];
    const pending = [];
    for (const identifiers of lists) {
      pending.push(
        await app.handle(
          new Request("http://localhost/v1/identity-resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identifiers }) }),
        ),
      );
    }
    // Read last first: each answer must still be its own request's.
    for (let i = lists.length - 1; i >= 0; i--) {
      const body = await pending[i]!.json() as { identities: { input: string }[] };
      expect(body.identities.map((identity) => identity.input)).toEqual(lists[i]!);
    }
  });

  test("a did:web naming no domain is unknown, and no label holds a bidirectional control (they read as other names)", async () => {
    // `did:web:\u202emoc.lapyap` shows as `paypal.com`, `p\u0430ypal.com` is Cyrillic, `\u202enimda (x)` reads `admin (x)`.
    const identifiers = ["did:web:\u202emoc.lapyap", "did:web:p\u0430ypal.com", "did:handle:x:\u202enimda", "did:web:paypal.com"];
    const res = await resolve({ identifiers });
    expect(res.status).toBe(200);
    expect(res.body.identities.map((r: { label: string; type: string }) => [r.label, r.type])).toEqual([
      ["Unknown", "unknown"],
      ["did:web:p\u0430ypal.com", "unknown"],
      ["Unknown", "did-handle"],
      ["paypal.com", "did-web"],
    ]);
  });

  test("an empty list gives an empty list", async () => {
    expect(await resolve({ identifiers: [] })).toEqual({ status: 200, body: { identities: [] } });
  });

  test("101 identifiers, a non-array or non-strings are 400 INVALID_INPUT; bad JSON 400 INVALID_JSON", async () => {
    for (const body of [{ identifiers: Array(101).fill("a.com") }, { identifiers: "a.com" }, { identifiers: [1] }, {}, []]) {
      const res = await resolve(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("INVALID_INPUT");
    }
    expect((await resolve("{oops")).body.code).toBe("INVALID_JSON");
  });

  test("thousands of generated strings never produce a 5xx", async () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const prefixes = ["", "did:", "did:web:", "did:pkh:", "did:jwk:", "did:key:", "did:handle:", "did:ethr:", "eip155:", "0x", "::::", "did:artifact:"];
    const pieces = ["a", "Z", ":", "/", "#", ".", "%3A", "\u0000", "\n", "😀", "www.", "0xAbC", "-", " ", "é", "\u202e"];
    for (let batch = 0; batch < 40; batch++) {
      const identifiers = Array.from({ length: 100 }, () => {
        let s = prefixes[Math.floor(rand() * prefixes.length)]!;
        const n = Math.floor(rand() * (rand() < 0.05 ? 3000 : 20));
        for (let i = 0; i < n; i++) s += pieces[Math.floor(rand() * pieces.length)];
        return s;
      });
      const res = await resolve({ identifiers });
      expect(res.status).toBe(200);
      expect(res.body.identities).toHaveLength(100);
      for (const record of res.body.identities) {
        expect(typeof record.label).toBe("string");
        expect(typeof record.canonical).toBe("string");
      }
    }
  });
});

describe("openapi", () => {
  test("describes every documented path with its models", () => {
    const doc = buildOpenApi(ROUTE_DOCS, { title: "t", version: "1", serverUrl: "http://localhost" });
    for (const path of ["/v1/nonce", "/api/eas/delegated-attest", "/v1/trust-anchors", "/v1/identity/resolve", "/readyz"]) {
      expect(doc.paths[path]).toBeDefined();
    }
    const post = doc.paths["/v1/identity-resolve"]!.post as { requestBody: { content: Record<string, { schema: { properties: object } }> } };
    expect(Object.keys(post.requestBody.content["application/json"]!.schema.properties)).toEqual(["identifiers"]);
  });
});

describe("identity-resolve record cache", () => {
  const post = (app: ReturnType<typeof identityRoutes>, identifiers: string[]) =>
    app.handle(new Request("http://localhost/v1/identity-resolve", { method: "POST", body: JSON.stringify({ identifiers }) }));

  test("is bounded by bytes, dropping the oldest records first", () => {
    const cache = createRecordCache({ maxBytes: 100_000, maxKeyLength: 512 });
    const bytes = (text: string) => new TextEncoder().encode(text);
    for (let i = 0; i < 5_000; i++) cache.set(`did:web:host${i}.example.com`, bytes("r".repeat(200 + (i % 300))));
    expect(cache.bytes()).toBeLessThanOrEqual(100_000);
    expect(cache.bytes()).toBeGreaterThan(90_000);
    expect(cache.get("did:web:host0.example.com")).toBeUndefined();
    expect(cache.get("did:web:host4999.example.com")).toEqual(bytes("r".repeat(200 + (4999 % 300))));
  });

  test("by default holds at most 16 MiB and no identifier over 512 characters", () => {
    expect(DEFAULT_CACHE_LIMITS).toEqual({ maxBytes: 16 * 1024 * 1024, maxKeyLength: 512 });
    const cache = createRecordCache();
    cache.set("x".repeat(513), new Uint8Array(2));
    expect(cache.size()).toBe(0);
    const record = new Uint8Array(3_000);
    for (let i = 0; i < 20_000; i++) cache.set(`${i}:${"k".repeat(500)}`.slice(0, 512), record);
    expect(cache.bytes()).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(cache.size()).toBeLessThan(20_000);
  });

  test("long identifiers are resolved every time and never kept; short ones are kept", async () => {
    const cache = createRecordCache({ maxBytes: 1 << 20, maxKeyLength: 512 });
    const app = identityRoutes({ cache });
    // As long as an identifier may be (MAX_IDENTIFIER_LENGTH), far past the cache's key bound.
    const long = Array.from({ length: 100 }, (_, i) => `did:web:${i}.${"a".repeat(10 * 1024)}`.slice(0, MAX_IDENTIFIER_LENGTH));
    const res = await post(app, long);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { identities: unknown[] }).identities).toHaveLength(100);
    expect([cache.size(), cache.bytes()]).toEqual([0, 0]);
    await post(app, ["did:web:example.com"]);
    expect(new TextDecoder().decode(cache.get("did:web:example.com"))).toContain("example.com");
  });

  test("10,000 distinct 10 KB identifiers do not grow the process", async () => {
    const app = identityRoutes();
    const heap = () => {
      Bun.gc(true);
      return process.memoryUsage().heapUsed;
    };
    const before = heap();
    for (let batch = 0; batch < 100; batch++) {
      const identifiers = Array.from({ length: 100 }, (_, i) => `did:web:${batch}-${i}.${"b".repeat(10 * 1024)}`.slice(0, MAX_IDENTIFIER_LENGTH));
      expect((await post(app, identifiers)).status).toBe(200);
    }
    expect(heap() - before).toBeLessThan(64 * 1024 * 1024);
  });
});

describe("identity-resolve answer cache", () => {
  /** A record cache that counts its lookups: a body answered from the answer cache looks up no record. */
  const countingCache = () => {
    const inner = createRecordCache();
    const counted = { lookups: 0, ...inner, get: (identifier: string) => (counted.lookups++, inner.get(identifier)) };
    return counted satisfies RecordCache;
  };
  const request = (text: string) => new Request("http://localhost/v1/identity-resolve", { method: "POST", headers: { "content-type": "application/json" }, body: text });

  test("the same body again is the same answer, bytes and headers, without parsing it or looking up a record", async () => {
    const cache = countingCache();
    const answers = createAnswerCache();
    const app = identityRoutes({ resolve: createIdentityResolve({ cache, answers, headers: { "access-control-allow-origin": "*" } }) });
    const text = JSON.stringify({ identifiers: ["did:web:Example.com", "0x0000000000000000000000000000000000000001", "did:handle:github:octocat"] });
    const first = await app.handle(request(text));
    expect([first.status, cache.lookups, answers.size()]).toEqual([200, 3, 1]);
    const firstBytes = await first.text();
    for (let i = 0; i < 3; i++) {
      const again = await app.handle(request(text));
      expect(again.status).toBe(200);
      expect(again.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(again.headers.get("access-control-allow-origin")).toBe("*");
      expect(await again.text()).toBe(firstBytes);
    }
    expect(cache.lookups).toBe(3);
    // The same list spaced otherwise is another text: parsed and assembled, the same JSON.
    const spaced = await app.handle(request(JSON.stringify(JSON.parse(text), null, 2)));
    expect(cache.lookups).toBe(6);
    expect(await spaced.json()).toEqual(JSON.parse(firstBytes));
    expect(answers.size()).toBe(2);
  });

  test("refusals are never kept: the same bad body is refused each time, after parsing it again", async () => {
    const answers = createAnswerCache();
    const app = identityRoutes({ resolve: createIdentityResolve({ answers }) });
    for (const text of ['{"identifiers":[1]}', "{oops", '{"identifiers":[1]}', "{oops"]) {
      const res = await app.handle(request(text));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe(text === "{oops" ? "INVALID_JSON" : "INVALID_INPUT");
    }
    expect(answers.size()).toBe(0);
  });

  test("is bounded by bytes (bodies and answers), oldest first; a body over 16,384 characters is answered but never kept", async () => {
    expect(DEFAULT_ANSWER_CACHE_LIMITS).toEqual({ maxBytes: 8 * 1024 * 1024, maxKeyLength: 16 * 1024 });
    const answers = createAnswerCache({ maxBytes: 200_000, maxKeyLength: 16 * 1024 });
    const app = identityRoutes({ resolve: createIdentityResolve({ answers }) });
    const bodyOf = (n: number) => JSON.stringify({ identifiers: Array.from({ length: 20 }, (_, i) => `did:web:host${n}-${i}.example.com`) });
    for (let n = 0; n < 300; n++) expect((await app.handle(request(bodyOf(n)))).status).toBe(200);
    expect(answers.bytes()).toBeLessThanOrEqual(200_000);
    expect(answers.bytes()).toBeGreaterThan(150_000);
    expect(answers.get(bodyOf(0))).toBeUndefined();
    expect(await answers.get(bodyOf(299))!.text()).toContain("host299-19.example.com");
    const long = JSON.stringify({ identifiers: Array.from({ length: 100 }, (_, i) => `did:web:${"l".repeat(200)}${i}.example.com`) });
    expect(long.length).toBeGreaterThan(16 * 1024);
    const before = answers.size();
    const res = await app.handle(request(long));
    expect(((await res.json()) as { identities: unknown[] }).identities).toHaveLength(100);
    expect(answers.size()).toBe(before);
    expect(answers.get(long)).toBeUndefined();
  });
});
