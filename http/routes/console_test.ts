import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../adapters/observability/mod.ts";
import { buildConsoleBundle, loadConsoleBundle } from "../../console/assets.ts";
import { createReadNonce } from "../../domain/delegation/mod.ts";
import { fakeEasReader } from "../../ports/fakes/mod.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { createApp } from "../app.ts";

const anchors: TrustAnchors = { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] };

function app(bundle = loadConsoleBundle) {
  return createApp({
    eas: {
      readNonce: createReadNonce(fakeEasReader()),
      delegatedAttest: () => Promise.resolve({ ok: false, code: "INTERNAL_ERROR", message: "" }) as never,
      chainName: "ATS <Devnet>",
      chainId: 31337,
      easAddress: "0x0000000000000000000000000000000000000000",
    },
    trustAnchors: anchors,
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    console: { bundle, settings: { chainId: 31337, chainName: "ATS <Devnet>", serviceDnsLabel: "omatrust" } },
  });
}

const get = (path: string, bundle?: typeof loadConsoleBundle) => app(bundle).handle(new Request(`http://localhost${path}`));

describe("the console routes", () => {
  test("GET / is the page under a strict policy: same-origin script and style, nothing inline, settings escaped", async () => {
    const res = await get("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("unsafe");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();
    expect(html).toMatch(/<script type="module" src="\/console\/app\.js\?v=[0-9a-f]{12}"><\/script>/);
    // No inline script or style, no event-handler attributes.
    expect(html.match(/<script[^>]*>[^<]+<\/script>/)).toBeNull();
    expect(html).not.toContain("<style");
    expect(html).not.toMatch(/\son[a-z]+=/);
    expect(html).toContain('<meta name="ats-chain-name" content="ATS &lt;Devnet&gt;">');
    expect(html).toContain("_omatrust.&lt;domain&gt;");
    // Every input has a label.
    for (const [, id] of html.matchAll(/<(?:input|select|textarea) id="([^"]+)"/g)) expect(html).toContain(`<label for="${id}">`);
    // Every pattern is the regular expression it means: the attester's lost its backslashes in the template ("s*0x…s*"),
    // which refused a pasted address with a space and let "sss0x…s" through.
    const patterns = [...html.matchAll(/pattern="([^"]*)"/g)].map(([, p]) => new RegExp(`^(?:${p})$`, "v"));
    expect(patterns.length).toBeGreaterThan(0);
    const attester = patterns[0]!;
    expect([` 0x${"ab".repeat(20)} `, `sss0x${"ab".repeat(20)}s`].map((v) => attester.test(v))).toEqual([true, false]);
  });

  test("the script and stylesheet are served with their types; HEAD and POST are 405 like every route", async () => {
    const js = await get("/console/app.js");
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const code = await js.text();
    expect(code.length).toBeGreaterThan(1000);
    expect(code).not.toContain("innerHTML");
    const css = await get("/console/app.css");
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await css.text()).toContain("@media");
    const post = await app().handle(new Request("http://localhost/", { method: "POST" }));
    expect([post.status, (await post.json()).code]).toEqual([405, "METHOD_NOT_ALLOWED"]);
  });

  test("a bundle that cannot be built is a 500 with the error body, and the next request tries again", async () => {
    let calls = 0;
    const flaky = () => (++calls === 1 ? Promise.reject(new Error("boom")) : buildConsoleBundle());
    const application = app(flaky);
    const first = await application.handle(new Request("http://localhost/console/app.js"));
    expect([first.status, await first.json()]).toEqual([500, { error: "Internal error", code: "INTERNAL_ERROR" }]);
    expect((await application.handle(new Request("http://localhost/console/app.js"))).status).toBe(200);
  });
});
