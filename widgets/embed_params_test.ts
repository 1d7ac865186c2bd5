import { describe, expect, test } from "bun:test";
import { domainOf, parseEmbedParams } from "./embed_params.ts";

const CONTRACT = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const parse = (query: Record<string, string>) => parseEmbedParams(new URLSearchParams(query));
const base = { url: "https://www.Example.com/app?x=1", contract: CONTRACT, chainId: "31337" };

describe("parseEmbedParams", () => {
  test("the subject is did:web of the domain, www. stripped; optional parameters read when given", () => {
    const parsed = parse({ ...base, name: "Acme <b>Quest</b>", icon: "https://cdn.example/icon.png", wallet: CONTRACT });
    expect(parsed).toEqual({
      ok: true,
      value: {
        domain: "example.com",
        subject: "did:web:example.com",
        contract: CONTRACT,
        chainId: 31337,
        name: "Acme <b>Quest</b>",
        icon: "https://cdn.example/icon.png",
        wallet: CONTRACT,
        explorer: undefined,
      },
    });
  });

  test("each bad or missing parameter is named, in order", () => {
    const cases: [Record<string, string>, string][] = [
      [{ contract: CONTRACT, chainId: "1" }, "url"],
      [{ ...base, url: "<script>alert(1)</script>" }, "url"],
      [{ ...base, url: "127.0.0.1" }, "url"],
      [{ ...base, contract: "0x1234" }, "contract"],
      [{ url: "example.com", chainId: "1" }, "contract"],
      [{ ...base, chainId: "0" }, "chainId"],
      [{ ...base, chainId: "1e3" }, "chainId"],
      [{ ...base, chainId: "99999999999999999999" }, "chainId"],
      [{ url: "example.com", contract: CONTRACT }, "chainId"],
      [{ ...base, name: "x".repeat(101) }, "name"],
      [{ ...base, name: "a\u0000b" }, "name"],
      [{ ...base, name: "Uni\u202Eswap" }, "name"],
      [{ ...base, icon: "http://cdn.example/i.png" }, "icon"],
      [{ ...base, icon: "javascript:alert(1)" }, "icon"],
      [{ ...base, wallet: "nobody" }, "wallet"],
      // One letter's case flipped: not the checksum. The page took it and the review could never be written.
      [{ ...base, wallet: "0x5FbDB2315678afecb367f032d93F642f64180aA3" }, "wallet"],
      [{ ...base, contract: "0x5fbDB2315678afecb367f032d93F642f64180aa3" }, "contract"],
      [{ ...base, explorer: "http://api.example" }, "explorer"],
    ];
    for (const [query, param] of cases) {
      const parsed = parse(query);
      expect({ query, param: parsed.ok ? undefined : parsed.error.param }).toEqual({ query, param });
    }
    const bad = parse({ ...base, url: "<b>x</b>" });
    expect(bad.ok ? undefined : bad.error.value).toBe("<b>x</b>");
  });

  test("an address in lower or upper case, or with its checksum, is taken", () => {
    for (const wallet of [CONTRACT, CONTRACT.toLowerCase(), `0x${CONTRACT.slice(2).toUpperCase()}`]) {
      expect(parse({ ...base, wallet, contract: wallet }).ok).toBe(true);
    }
  });

  test("domainOf takes a bare domain or a URL's host", () => {
    expect(domainOf("play.acmequest.com")).toBe("play.acmequest.com");
    expect(domainOf("WWW.Shop.Test.")).toBe("shop.test");
    expect(domainOf("https://shop.test:8443/path")).toBe("shop.test");
    expect(domainOf("shop test")).toBeUndefined();
    expect(domainOf("did:web:shop.test")).toBeUndefined();
  });
});
