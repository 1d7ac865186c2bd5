import { describe, expect, test } from "bun:test";
import { builderSnippets } from "./builder.ts";

const query = new URLSearchParams({ url: "acme-quest.example", contract: `0x${"1".repeat(40)}`, chainId: "8453", name: "Acme" });

describe("builderSnippets", () => {
  test("basic mode: one iframe whose src is the widget on this service", () => {
    const s = builderSnippets("https://ats.example", query, "basic", "Review Acme");
    expect(s.install).toBeUndefined();
    expect(s.bridge).toBeUndefined();
    expect(s.iframe).toContain(`src="https://ats.example/widgets/reviews/embed?${query}"`);
    expect(s.iframe).toContain('id="omatrust-widget"');
  });

  test("integrated mode: the install line, an iframe without src and the bridge started before the frame loads", () => {
    const s = builderSnippets("https://ats.example", query, "integrated", `Review "Acme" <x>`);
    expect(s.install).toBe("npm install @ats/client viem");
    expect(s.iframe).not.toContain("src=");
    expect(s.iframe).toContain('title="Review &#34;Acme&#34; &#60;x&#62;"');
    expect(s.bridge).toContain('iframeId: "omatrust-widget"');
    expect(s.bridge).toContain('baseUrl: "https://ats.example"');
    expect(s.bridge!.indexOf("createSigningBridge({")).toBeLessThan(s.bridge!.indexOf(".src ="));
  });
});
