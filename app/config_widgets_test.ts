import { describe, expect, test } from "bun:test";
import { readConfig } from "./config.ts";

describe("readConfig(): the review widget's settings (decisions §29)", () => {
  test("WIDGET_ORIGINS and EXPLORER_API_URLS: none by default; pairs read per chain; a bad pair names the variable", () => {
    expect(readConfig({}).widgets.widgetOrigins).toEqual([]);
    expect(readConfig({}).widgets.explorerApiUrls.size).toBe(0);
    expect(readConfig({ WIDGET_ORIGINS: "https://cdn.example, https://w.example" }).widgets.widgetOrigins).toEqual(["https://cdn.example", "https://w.example"]);
    const urls = readConfig({ EXPLORER_API_URLS: "8453=https://api.basescan.org/api?apikey=K,66238=https://explorer.example/api" }).widgets.explorerApiUrls;
    expect([...urls]).toEqual([[8453, "https://api.basescan.org/api?apikey=K"], [66238, "https://explorer.example/api"]]);
    for (const bad of ["8453", "0=https://x.example", "8453=ftp://x.example", "1=https://a.example,1=https://b.example"]) {
      expect(() => readConfig({ EXPLORER_API_URLS: bad })).toThrow(/EXPLORER_API_URLS/);
    }
  });

  test("WIDGET_ORIGINS are origins as a browser writes event.origin; anything else names the variable and the value", () => {
    // The reference's bridge compares origins as strings: these were published as written and never matched.
    expect(readConfig({ WIDGET_ORIGINS: "https://cdn.example/,HTTPS://W.Example:443,http://127.0.0.1:8081" }).widgets.widgetOrigins)
      .toEqual(["https://cdn.example", "https://w.example", "http://127.0.0.1:8081"]);
    for (const bad of ["*", "not a url", "https://cdn.example/widgets", "https://cdn.example/?a=1", "https://cdn.example/#x", "https://u@cdn.example", "ftp://cdn.example", "javascript:alert(1)"]) {
      expect(() => readConfig({ WIDGET_ORIGINS: bad })).toThrow(/^WIDGET_ORIGINS: expected origins such as https:\/\/cdn\.example/);
    }
  });
});
