import { expect, test } from "bun:test";
import { metricsRoute } from "./health.ts";

test("/metrics answers a direct scrape, and a request a proxy forwarded (the public side) as an unknown path", async () => {
  const app = metricsRoute(() => Promise.resolve("ats_up 1\n"));
  const direct = await app.handle(new Request("http://10.0.0.5:8080/metrics"));
  expect([direct.status, await direct.text()]).toEqual([200, "ats_up 1\n"]);
  // Through the compose balancer (`option forwardfor`) or an ingress: before, `/./metrics` passed the balancer's
  // rule on the path, and the server read it as /metrics.
  for (const headers of [{ "x-forwarded-for": "203.0.113.9" }, { forwarded: "for=203.0.113.9" }] as Record<string, string>[]) {
    const forwarded = await app.handle(new Request("http://ats.example/metrics", { headers }));
    expect([forwarded.status, ((await forwarded.json()) as { code: string }).code]).toEqual([404, "NOT_FOUND"]);
  }
});
