import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../adapters/observability/mod.ts";
import { createReadNonce } from "../../domain/delegation/mod.ts";
import { fakeEasReader } from "../../ports/fakes/mod.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { loadWidgetBundle } from "../../widgets/assets.ts";
import { createApp } from "../app.ts";

const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const EAS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const CONTRACT = "0x1111111111111111111111111111111111111111";
const anchors = (schemas: Record<string, string>): TrustAnchors => ({
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { "eip155:31337": { name: "ATS Devnet", easContract: EAS, schemas } },
  registries: [],
});

function app(options: { schemas?: Record<string, string>; bundle?: typeof loadWidgetBundle } = {}) {
  return createApp({
    eas: {
      readNonce: createReadNonce(fakeEasReader()),
      delegatedAttest: () => Promise.resolve({ ok: false, code: "INTERNAL_ERROR", message: "" }) as never,
      chainName: "ATS <Devnet>",
      chainId: 31337,
      easAddress: EAS,
    },
    trustAnchors: anchors(options.schemas ?? { "user-review": SCHEMA }),
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    console: { bundle: () => Promise.reject(new Error("unused")), settings: { chainId: 31337, chainName: "ATS", serviceDnsLabel: "omatrust" } },
    widgets: { bundle: options.bundle ?? loadWidgetBundle },
  });
}

const embed = (query: Record<string, string>, options?: Parameters<typeof app>[0]) =>
  app(options).handle(new Request(`http://localhost/widgets/reviews/embed?${new URLSearchParams(query)}`));

describe("the review widget's routes", () => {
  test("the widget is framable by any page and keeps a strict policy for its own scripts and connections", async () => {
    const res = await embed({ url: "www.Shop.example", contract: CONTRACT, chainId: "8453", name: "Shop" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("frame-ancestors *");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("unsafe");
    expect(res.headers.get("x-frame-options")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const html = await res.text();
    expect(html).toMatch(/<script type="module" src="\/widgets\/reviews\/widget\.js\?v=[0-9a-f]{12}"><\/script>/);
    expect(html.match(/<script[^>]*>[^<]+<\/script>/)).toBeNull();
    expect(html).not.toContain("<style");
    expect(html).not.toMatch(/\son[a-z]+=/);
    expect(html).toContain("did:web:shop.example");
    expect(html).toContain(`<meta name="ats-review-schema" content="${SCHEMA}">`);
    expect(html).toContain('<meta name="ats-chain-name" content="ATS &lt;Devnet&gt;">');
  });

  test("markup in every parameter is text: escaped in the page, or the parameter refused and named", async () => {
    const markup = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;
    const good = await embed({ url: "shop.example", contract: CONTRACT, chainId: "1", name: markup, icon: `https://cdn.example/${markup}` });
    expect(good.status).toBe(200);
    const html = await good.text();
    expect(html).not.toContain("<script>alert");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    for (const param of ["url", "contract", "chainId", "wallet", "explorer"]) {
      const res = await embed({ url: "shop.example", contract: CONTRACT, chainId: "1", [param]: markup });
      expect({ param, status: res.status }).toEqual({ param, status: 400 });
      const page = await res.text();
      expect(page).toContain(`<code id="bad-param">${param}</code>`);
      expect(page).not.toContain("<script>alert");
      expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors *");
    }
    const missing = await embed({ contract: CONTRACT, chainId: "1" });
    expect([missing.status, (await missing.text()).includes('<code id="bad-param">url</code>')]).toEqual([400, true]);
  });

  test("the builder is served under its own policy: it frames the service only and is never framed", async () => {
    const res = await app().handle(new Request("http://localhost/widgets/reviews/create"));
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("frame-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    expect(html).toContain("ATS &lt;Devnet&gt;");
    for (const [, id] of html.matchAll(/<input id="([^"]+)"/g)) expect(html).toContain(`<label class="field" for="${id}">`);
  });

  test("no user-review schema anchored on the chain: a page saying so (503), never a blank frame", async () => {
    const res = await embed({ url: "shop.example", contract: CONTRACT, chainId: "1" }, { schemas: {} });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("takes no user reviews");
  });

  test("the script bundles the signer recovery and writes no HTML from data; a failed build is a 500", async () => {
    const js = await app().handle(new Request("http://localhost/widgets/reviews/widget.js"));
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const code = await js.text();
    expect(code).not.toContain("innerHTML");
    expect(code).toContain("omatrust:signTypedData");
    const broken = await embed({ url: "shop.example", contract: CONTRACT, chainId: "1" }, { bundle: () => Promise.reject(new Error("no")) });
    expect(broken.status).toBe(500);
  });
});
