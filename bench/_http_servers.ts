// Child process of bench/identity_resolve.ts: the app (with in-memory fakes, no chain) behind the service's own edge
// (http/instrument.ts: request id, context, deadline, metrics), the same app without identity-resolve's answer cache,
// the same app with every request through Elysia, and a raw Bun.serve that reads and parses the same body and answers
// precomputed bytes, on four loopback ports. Prints {"app":port,"assembling":port,"elysia":port,"raw":port,"cpu":port}
// (the last answers this process's CPU time so far, in µs).
import { createPrometheusMetrics, silentLogger } from "../adapters/observability/mod.ts";
import { resolveIdentities } from "../domain/identity/mod.ts";
import { createDelegatedAttest } from "../domain/delegation/mod.ts";
import { createReadNonce } from "../domain/delegation/mod.ts";
import { createApp } from "../http/app.ts";
import { instrumentedHandler } from "../http/instrument.ts";
import { stringify } from "../http/errors.ts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeReplayStore } from "../ports/fakes/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";

const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-05-04T00:00:00Z",
  widgetOrigins: [],
  chains: {
    "eip155:66238": {
      name: "OMAChain Testnet",
      easContract: "0x8835AF90f1537777F52E482C8630cE4e947eCa32",
      schemas: {
        certification: "0x2b0d1100f7943c0c2ea29e35c1286bd860fa752124e035cafb503bb83f234805",
        "controller-witness": "0xc81419f828755c0be2c49091dcad0887b5ca7342316dfffb4314aadbf8205090",
        "user-review": "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47",
      },
    },
  },
  registries: [{
    type: "approved-issuers",
    issuers: [{ address: "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb", label: "Testnet wallet", schemas: ["controller-witness"] }],
  }],
};
const eas = fakeEasReader();
const appDeps = {
  eas: {
    readNonce: createReadNonce(eas),
    delegatedAttest: createDelegatedAttest({
      clock: fakeClock(),
      eas,
      delegate: fakeDelegate(),
      replay: fakeReplayStore(),
      mainnet: false,
      subsidized: new Map(),
    }),
    chainName: "OMAChain Testnet",
    chainId: 66238,
    easAddress: eas.easAddress,
  },
  trustAnchors: anchors,
  log: silentLogger,
  ready: () => Promise.resolve({ ready: true, checks: {} }),
};
const app = createApp(appDeps);
const appServer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: instrumentedHandler(app as never, { metrics: createPrometheusMetrics(), log: silentLogger }),
});
// The same app with every request through Elysia (an app handed to the server without its `edge`):
// what the RPC-free routes cost before they were answered at the edge (http/edge_routes.ts), in the same run.
const throughElysia = { routes: app.routes, handle: (request: Request) => app.handle(request) };
const elysiaServer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: instrumentedHandler(throughElysia as never, { metrics: createPrometheusMetrics(), log: silentLogger }),
});

// The same app without identity-resolve's cache of whole answers: every answer parsed, checked and assembled from the
// cached records, what a list not asked for before costs (http/routes/identity.ts).
const assemblingServer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: instrumentedHandler(createApp({ ...appDeps, identityAnswers: null }) as never, { metrics: createPrometheusMetrics(), log: silentLogger }),
});

const anchorsBytes = stringify(anchors);
const headers = { "content-type": "application/json; charset=utf-8", "access-control-allow-origin": "*" };
// The raw endpoint returns the bytes the app returns for the benchmark's body, precomputed.
const identitiesBytes = JSON.stringify({ identities: resolveIdentities(JSON.parse(process.argv[2] ?? '{"identifiers":[]}').identifiers) });
const rawServer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    if (new URL(request.url).pathname === "/trust-anchors") return new Response(anchorsBytes, { headers });
    // The floor of a route that must read the identifiers: the body read and parsed, nothing else.
    const body = JSON.parse(await request.text()) as { identifiers?: unknown };
    if (!Array.isArray(body.identifiers)) return new Response("{}", { status: 400, headers });
    return new Response(identitiesBytes, { headers });
  },
});
// This process's CPU time in µs, for the CPU each server spends per request (one server loaded at a time).
const cpuServer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => {
    const used = process.cpuUsage();
    return new Response(String(used.user + used.system));
  },
});
console.log(JSON.stringify({ app: appServer.port, assembling: assemblingServer.port, elysia: elysiaServer.port, raw: rawServer.port, cpu: cpuServer.port }));
process.on("SIGINT", () => process.exit(0));
