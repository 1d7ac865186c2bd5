import { describe, expect, test } from "bun:test";
import type { Elysia } from "elysia";
import { silentLogger } from "../adapters/json_logger.ts";
import { createPrometheusMetrics } from "../adapters/prometheus_metrics.ts";
import { clientKeyOf } from "../domain/sessions.ts";
import { clientAddressOf, instrumentedHandler, requestClientAddress } from "./instrument.ts";

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
