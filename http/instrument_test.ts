import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createJsonLogger, silentLogger } from "../adapters/observability/mod.ts";
import { createPrometheusMetrics } from "../adapters/observability/mod.ts";
import { clientKeyOf } from "../domain/sessions/mod.ts";
import { pathOf } from "./cors.ts";
import { clientAddressOf, createDeadlines, instrumentedHandler, requestClientAddress, requestLogContext, routable } from "./instrument.ts";
import { requestIdFrom } from "./request_context.ts";

const forwarded = (header?: string) =>
  new Request("http://ats.test/v1/delegated-attest", { headers: header === undefined ? {} : { "x-forwarded-for": header } });

describe("clientAddressOf()", () => {
  test("TRUST_PROXY=0: the peer, whatever X-Forwarded-For says", () => {
    expect(clientAddressOf(forwarded("203.0.113.9"), "10.0.0.2", 0)).toBe("10.0.0.2");
  });

  test("TRUST_PROXY=N: the N-th entry from the right, which the N-th proxy wrote", () => {
    const header = "198.51.100.1, 203.0.113.9, 10.0.0.7";
    expect(clientAddressOf(forwarded(header), "10.0.0.2", 1)).toBe("10.0.0.7");
    expect(clientAddressOf(forwarded(header), "10.0.0.2", 2)).toBe("203.0.113.9");
    expect(clientAddressOf(forwarded(header), "10.0.0.2", 3)).toBe("198.51.100.1");
  });

  test("a header shorter than the hop count, absent, too long or naming no address at that position falls back to the peer", () => {
    expect(clientAddressOf(forwarded("203.0.113.9"), "10.0.0.2", 2)).toBe("10.0.0.2");
    expect(clientAddressOf(forwarded(), "10.0.0.2", 1)).toBe("10.0.0.2");
    expect(clientAddressOf(forwarded(`${"1.2.3.4, ".repeat(500)}203.0.113.9`), "10.0.0.2", 1)).toBe("10.0.0.2");
    for (const bad of ["unknown", "", "evil.example", "203.0.113.999", "203.0.113.9:", "[::1"]) {
      expect(clientAddressOf(forwarded(`203.0.113.9, ${bad}`), "10.0.0.2", 1)).toBe("10.0.0.2");
    }
  });

  test("what the client writes to the left of the trusted hops is never read", () => {
    expect(clientAddressOf(forwarded("1.1.1.1, 2.2.2.2, garbage, 203.0.113.9"), "10.0.0.2", 1)).toBe("203.0.113.9");
  });

  test("a port some balancers add is dropped; IPv6 keeps its /64 key", () => {
    expect(clientAddressOf(forwarded("203.0.113.9:5678"), "10.0.0.2", 1)).toBe("203.0.113.9");
    const v6 = clientAddressOf(forwarded("[2001:db8:1:2::99]:443"), "10.0.0.2", 1);
    expect(clientKeyOf(v6)).toBe("2001:db8:1:2::/64");
    expect(clientKeyOf(clientAddressOf(forwarded("2001:db8:1:2:aaaa::1"), "10.0.0.2", 1))).toBe("2001:db8:1:2::/64");
  });
});

describe("instrumentedHandler() and TRUST_PROXY", () => {
  const seen = () => {
    const addresses: (string | undefined)[] = [];
    const app = {
      routes: [],
      handle: () => {
        addresses.push(requestClientAddress());
        return Promise.resolve(new Response("ok"));
      },
    } as unknown as Elysia;
    return { app, addresses };
  };
  const peer = { requestIP: () => ({ address: "10.0.0.2" }) };

  test("the request context carries the client address computed with the hop count", async () => {
    const { app, addresses } = seen();
    await instrumentedHandler(app, { metrics: createPrometheusMetrics(), log: silentLogger })(forwarded("203.0.113.9"), peer);
    await instrumentedHandler(app, { metrics: createPrometheusMetrics(), log: silentLogger, trustProxy: 1 })(forwarded("203.0.113.9"), peer);
    expect(addresses).toEqual(["10.0.0.2", "203.0.113.9"]);
  });
});

describe("routable()", () => {
  test("Elysia routes the path the guards read (pathOf), whatever the host and scheme", async () => {
    const app = new Elysia({ strictPath: true })
      .get("/v1/trust-anchors", () => "/v1/trust-anchors")
      .get("/trust-anchors", () => "/trust-anchors")
      .get("/", () => "/");
    for (const url of [
      "http://a/v1/trust-anchors",
      "http://ab/v1/trust-anchors?x=1",
      "http://abc/v1/trust-anchors",
      "http://abcd/v1/trust-anchors",
      "https://a/v1/trust-anchors",
      "https://abc/v1/trust-anchors",
      "http://a:1/v1/trust-anchors",
      "http://[::1]/v1/trust-anchors",
      "http://a/trust-anchors",
      "http://a/",
      "http://service.example.com/v1/trust-anchors?a=/b",
    ]) {
      const request = new Request(url);
      const routed = routable(request);
      const answer = await app.handle(routed);
      expect({ url, routed: answer.status === 200 ? await answer.text() : answer.status }).toEqual({ url, routed: pathOf(url) });
      expect(pathOf(routed.url)).toBe(pathOf(url));
    }
  });

  test("a request without a Host (HTTP/1.0, a balancer's health check) is routed by its path, over a real socket", async () => {
    expect(pathOf("/readyz")).toBe("/readyz");
    expect(pathOf("/v1/trust-anchors?x=/y")).toBe("/v1/trust-anchors");
    const app = new Elysia({ strictPath: true }).get("/readyz", () => "ready?").get("/", () => "the console");
    const handler = instrumentedHandler(app, { metrics: createPrometheusMetrics(), log: silentLogger });
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request, srv) => handler(request, srv) });
    try {
      for (const target of ["/readyz", "/readyz?full=1"]) {
        // HAProxy's `option httpchk GET /readyz` sends exactly this: no Host, HTTP/1.0.
        let text = "";
        await new Promise<void>((resolve, reject) => {
          void Bun.connect({
            hostname: "127.0.0.1",
            port: server.port!,
            socket: {
              open: (socket) => void socket.write(`GET ${target} HTTP/1.0\r\n\r\n`),
              data: (_socket, chunk) => void (text += new TextDecoder().decode(chunk)),
              close: () => resolve(),
              error: (_socket, error) => reject(error),
            },
          });
        });
        expect({ target, body: text.slice(text.indexOf("\r\n\r\n") + 4) }).toEqual({ target, body: "ready?" });
      }
    } finally {
      server.stop(true);
    }
  });

  test("a re-addressed request keeps its method, headers, query and streamed body", async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'));
        controller.enqueue(new TextEncoder().encode("1}"));
        controller.close();
      },
    });
    const request = new Request("http://a/v1/x?q=1", { method: "POST", headers: { "content-type": "application/json", "x-test": "yes" }, body, duplex: "half" } as RequestInit);
    const routed = routable(request);
    expect(routed.url).toBe("http://localhost/v1/x?q=1");
    expect(routed.method).toBe("POST");
    expect(routed.headers.get("x-test")).toBe("yes");
    expect(await routed.text()).toBe('{"a":1}');
    const plain = new Request("http://127.0.0.1:8080/v1/x");
    expect(routable(plain)).toBe(plain);
  });
});

describe("instrumentedHandler() deadline", () => {
  const hanging = { routes: [], handle: () => new Promise<Response>(() => {}) } as unknown as Elysia;
  const handler = (app: Elysia) => instrumentedHandler(app, { metrics: createPrometheusMetrics(), log: silentLogger, deadlineMs: 50 });
  const answer = async (app: Elysia, method: string, path: string) => {
    const response = await handler(app)(new Request(`http://ats.test${path}`, { method }));
    return { status: response.status, headers: response.headers, body: await response.json() as Record<string, unknown> };
  };

  test("a route still working at the deadline gets its own error body, CORS and elapsed", async () => {
    const cases: [string, string, number, string][] = [
      ["GET", "/v1/artifact-trust", 502, "NETWORK_ERROR"],
      ["GET", "/v1/controller-confirm", 502, "NETWORK_ERROR"],
      ["GET", "/readyz", 502, "NETWORK_ERROR"],
      ["GET", "/v1/nonce", 500, "RPC_ERROR"],
      ["GET", "/api/eas/nonce", 500, "RPC_ERROR"],
      ["GET", "/api/private/relay/eas/nonce", 500, "RPC_ERROR"],
      ["POST", "/v1/delegated-attest", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/api/private/relay/eas/delegated-attest", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/v1/controller-witness", 503, "OUTCOME_UNKNOWN"],
      // Found by review: a batch or a paid write maybe broadcast was 502 NETWORK_ERROR, "nothing was done".
      ["POST", "/v1/delegated-attest/batch", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/api/private/relay/eas/delegated-attest/batch", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/v1/paid/delegated-attest", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/v1/paid/controller-witness", 503, "OUTCOME_UNKNOWN"],
      ["POST", "/api/private/subjects", 502, "NETWORK_ERROR"],
    ];
    for (const [method, path, status, code] of cases) {
      const res = await answer(hanging, method, path);
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status, code });
      expect(typeof res.body.error).toBe("string");
      expect(res.headers.get("x-request-id")).toBeTruthy();
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("access-control-allow-origin")).toBe(path.startsWith("/api/private/") || path === "/v1/controller-witness" || path.startsWith("/v1/paid/") ? null : "*");
      expect(res.body.elapsed === undefined).toBe(!["/v1/nonce", "/api/eas/nonce", "/v1/delegated-attest", "/v1/delegated-attest/batch"].includes(path));
    }
  });

  test("each request's deadline line names that request, though one timer watches them all", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createJsonLogger("debug", { context: requestLogContext, out: (line) => lines.push(JSON.parse(line)) });
    const serve = instrumentedHandler(hanging, { metrics: createPrometheusMetrics(), log, deadlineMs: 60 });
    const first = serve(new Request("http://ats.test/v1/artifact-trust", { headers: { "x-request-id": "first" } }));
    await Bun.sleep(20);
    const second = serve(new Request("http://ats.test/v1/artifact-trust", { headers: { "x-request-id": "second" } }));
    expect((await Promise.all([first, second])).map((res) => res.headers.get("x-request-id"))).toEqual(["first", "second"]);
    expect(lines.filter((line) => line.event === "request_deadline").map((line) => line.requestId)).toEqual(["first", "second"]);
  });

  test("a request cut at shutdown logs the time it ran, as its elapsed says, not the deadline", async () => {
    // Review: `request_cut_at_shutdown` said "ms":245000 for writes cut about 20 s in (`elapsed: "21947ms"`).
    let clock = 1_000_000;
    let started = 0;
    const stuck = { routes: [], handle: () => (started++, new Promise<Response>(() => {})) } as unknown as Elysia;
    const lines: Record<string, unknown>[] = [];
    const log = createJsonLogger("debug", { context: requestLogContext, out: (line) => lines.push(JSON.parse(line)) });
    const serve = instrumentedHandler(stuck, { metrics: createPrometheusMetrics(), log, nowMs: () => clock });
    const answer = serve(new Request("http://ats.test/v1/delegated-attest", { method: "POST", body: "{}", headers: { "content-length": "2", "x-request-id": "cut" } }));
    while (started === 0) await Bun.sleep(1);
    clock += 21_947;
    serve.cut();
    const response = await answer;
    expect({ status: response.status, body: await response.json() }).toMatchObject({ status: 503, body: { code: "OUTCOME_UNKNOWN", elapsed: "21947ms" } });
    const cut = lines.filter((line) => line.event === "request_cut_at_shutdown");
    expect(cut).toEqual([expect.objectContaining({ requestId: "cut", method: "POST", path: "/v1/delegated-attest", ms: 21_947 })]);
  });

  test("an answer before the deadline is passed through", async () => {
    const quick = { routes: [], handle: () => Promise.resolve(new Response("ok", { status: 201 })) } as unknown as Elysia;
    const response = await handler(quick)(new Request("http://ats.test/v1/artifact-trust"));
    expect(response.status).toBe(201);
    expect(await response.text()).toBe("ok");
  });
});

describe("createDeadlines()", () => {
  test("answers in time pass through, late ones get the expiry's answer in arrival order, and the timer stops once none waits", async () => {
    const deadlines = createDeadlines(30);
    const order: string[] = [];
    const never = new Promise<string>(() => {});
    const quick = deadlines.race(Promise.resolve("answered"), () => "expired");
    const first = deadlines.race(never, () => (order.push("first"), "expired first"));
    const second = deadlines.race(never, () => (order.push("second"), "expired second"));
    expect(await quick).toBe("answered");
    expect(await first).toBe("expired first");
    expect(await second).toBe("expired second");
    expect(order).toEqual(["first", "second"]);
    expect(deadlines.size()).toBe(0);
    // An answer that comes after its deadline changes nothing; a failure in time is the caller's to handle.
    let late!: (value: string) => void;
    const slow = deadlines.race(new Promise<string>((resolve) => (late = resolve)), () => "expired");
    expect(await slow).toBe("expired");
    late("too late");
    expect(await slow).toBe("expired");
    await expect(deadlines.race(Promise.reject(new Error("boom")), () => "expired")).rejects.toThrow("boom");
    expect(deadlines.size()).toBe(0);
  });

  test("a thousand requests in flight: each answered once, by its own answer or its deadline", async () => {
    const deadlines = createDeadlines(20);
    const outcomes = await Promise.all(Array.from({ length: 1_000 }, (_, i) =>
      deadlines.race(i % 2 === 0 ? Promise.resolve(`answer ${i}`) : new Promise<string>(() => {}), () => `deadline ${i}`)
    ));
    outcomes.forEach((outcome, i) => expect(outcome).toBe(i % 2 === 0 ? `answer ${i}` : `deadline ${i}`));
    expect(deadlines.size()).toBe(0);
  });
});

test("fresh request ids are distinct UUIDs (version 8: a random part per process, then a counter)", () => {
  const ids = Array.from({ length: 1_000 }, () => requestIdFrom(null));
  expect(new Set(ids).size).toBe(1_000);
  for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(requestIdFrom("caller-id.1")).toBe("caller-id.1");
  expect(requestIdFrom("not plain!")).toMatch(/^[0-9a-f]{8}-/);
});
