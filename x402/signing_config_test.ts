import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { buildDidDocument } from "./did_document.ts";
import { createEip712Issuer, generateSigningJwk } from "./signers.ts";
import { issuerFromEnv } from "./signing_config.ts";

describe("issuerFromEnv()", () => {
  test("eip712 by default, kid on the configured chain", async () => {
    const key = generatePrivateKey();
    const issuer = await issuerFromEnv({ X402_SIGNING_KEY: key, X402_KID_CHAIN_ID: "8453" });
    expect(issuer.format).toBe("eip712");
    expect(issuer.kid).toBe(`did:pkh:eip155:8453:${privateKeyToAccount(key).address}#key-1`);
  });

  test("jws takes a private JWK and names the did:web of the public base URL", async () => {
    const jwk = await generateSigningJwk("EdDSA");
    const issuer = await issuerFromEnv({
      X402_SIGNING_FORMAT: "jws",
      X402_SIGNING_ALG: "EdDSA",
      X402_SIGNING_KEY: JSON.stringify(jwk),
      X402_PUBLIC_BASE_URL: "https://api.example.com:8443",
    });
    expect(issuer.kid).toBe("did:web:api.example.com%3A8443#key-1");
    expect(issuer.publicJwk).toEqual({ kty: "OKP", crv: "Ed25519", x: jwk.x, alg: "EdDSA" });
  });

  test("a bad value names the variable and never echoes the key", async () => {
    await expect(issuerFromEnv({})).rejects.toThrow("X402_SIGNING_KEY is required");
    await expect(issuerFromEnv({ X402_SIGNING_KEY: "0xsecret" })).rejects.toThrow("X402_SIGNING_KEY must be a 32-byte hex private key for eip712");
    const p256 = JSON.stringify(await generateSigningJwk("ES256"));
    const error = await issuerFromEnv({ X402_SIGNING_FORMAT: "jws", X402_SIGNING_ALG: "EdDSA", X402_SIGNING_KEY: p256, X402_PUBLIC_BASE_URL: "https://a.example" })
      .catch((e: Error) => e);
    expect(String(error)).toBe("Error: X402_SIGNING_KEY is not a usable EdDSA key");
  });
});

describe("the package's builders refuse what a user gets wrong, naming it (found by trying the packed package)", () => {
  test("createEip712Issuer with an unset key, generateSigningJwk with an algorithm it has not, buildDidDocument with no DID string", async () => {
    // Before: a bare TypeError from inside viem; an Ed25519 key for RS256; a document whose id was an object.
    expect(() => createEip712Issuer({ privateKey: undefined as never })).toThrow("privateKey must be a 32-byte hex string");
    expect(await generateSigningJwk("RS256" as never).then(() => "made", (e: Error) => e.message)).toContain("RS256 is not one of");
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    expect(() => buildDidDocument({ did: { ok: true, value: "did:web:api.example.com" } as never, issuers: [issuer] })).toThrow("did must be a DID string");
    expect(() => buildDidDocument({ did: "did:web:api.example.com#key-1", issuers: [issuer] })).toThrow("without a fragment");
    expect(buildDidDocument({ did: "did:web:api.example.com", issuers: [issuer] }).id).toBe("did:web:api.example.com");
  });
});
