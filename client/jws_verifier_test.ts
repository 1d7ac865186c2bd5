import { describe, expect, test } from "bun:test";
import { hexToBytes, sha256 } from "viem";
import { privateKeyToAccount, sign } from "viem/accounts";
import { base64UrlEncode, jwkToDidJwk } from "../domain/did/mod.ts";
import { verifyProofWrapper } from "../domain/artifact_trust/mod.ts";
import type { JwsAlgorithm } from "../ports/jws_verifier.ts";
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";

const verifier = createWebCryptoJwsVerifier();
const b64 = (bytes: Uint8Array) => base64UrlEncode(bytes);
const part = (value: unknown) => b64(new TextEncoder().encode(JSON.stringify(value)));
const PRIVATE_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";

type Signer = { alg: JwsAlgorithm; jwk: Record<string, unknown>; sign: (input: Uint8Array) => Promise<Uint8Array> };

async function webCryptoSigner(alg: "ES256" | "EdDSA"): Promise<Signer> {
  const params = alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "Ed25519" };
  const pair = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const jwk = y === undefined ? { kty, crv, x } : { kty, crv, x, y };
  const algorithm = alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : { name: "Ed25519" };
  return { alg, jwk, sign: async (input) => new Uint8Array(await crypto.subtle.sign(algorithm, pair.privateKey, new Uint8Array(input))) };
}

function secp256k1Signer(): Signer {
  const publicKey = hexToBytes(privateKeyToAccount(PRIVATE_KEY).publicKey);
  return {
    alg: "ES256K",
    jwk: { kty: "EC", crv: "secp256k1", x: b64(publicKey.slice(1, 33)), y: b64(publicKey.slice(33)) },
    async sign(input) {
      const signature = await sign({ hash: sha256(input), privateKey: PRIVATE_KEY });
      return hexToBytes(`0x${signature.r.slice(2).padStart(64, "0")}${signature.s.slice(2).padStart(64, "0")}`);
    },
  };
}

async function compactJws(signer: Signer, payload: Record<string, unknown>) {
  const signingInput = `${part({ alg: signer.alg, jwk: signer.jwk })}.${part(payload)}`;
  const signature = await signer.sign(new TextEncoder().encode(signingInput));
  return { jws: `${signingInput}.${b64(signature)}`, signingInput: new TextEncoder().encode(signingInput), signature };
}

describe("createWebCryptoJwsVerifier()", () => {
  for (const alg of ["ES256", "EdDSA", "ES256K"] as const) {
    test(`${alg}: verifies a real signature and refuses a tampered one, another key or another algorithm`, async () => {
      const signer = alg === "ES256K" ? secp256k1Signer() : await webCryptoSigner(alg);
      const { signingInput, signature } = await compactJws(signer, { hello: "world" });
      expect(await verifier.verify({ alg: signer.alg, jwk: signer.jwk, signingInput, signature })).toBe(true);
      const tampered = signingInput.slice();
      tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 1;
      expect(await verifier.verify({ alg: signer.alg, jwk: signer.jwk, signingInput: tampered, signature })).toBe(false);
      const other = await webCryptoSigner("ES256");
      expect(await verifier.verify({ alg: signer.alg, jwk: other.jwk, signingInput, signature })).toBe(false);
      const wrongAlg = signer.alg === "ES256" ? "ES256K" : "ES256";
      expect(await verifier.verify({ alg: wrongAlg, jwk: signer.jwk, signingInput, signature })).toBe(false);
      expect(await verifier.verify({ alg: signer.alg, jwk: signer.jwk, signingInput, signature: signature.slice(1) })).toBe(false);
    });
  }

  test("a broken JWK is not a signer, never a throw", async () => {
    const check = { signingInput: new Uint8Array([1]), signature: new Uint8Array(64) };
    expect(await verifier.verify({ ...check, alg: "ES256", jwk: { kty: "EC", crv: "P-256", x: "AA", y: "AA" } })).toBe(false);
    expect(await verifier.verify({ ...check, alg: "EdDSA", jwk: { kty: "OKP", crv: "Ed25519", x: "!" } })).toBe(false);
    expect(await verifier.verify({ ...check, alg: "ES256K", jwk: { kty: "EC", crv: "secp256k1" } })).toBe(false);
  });
});

describe("verifyProofWrapper() with real JWS signatures", () => {
  const now = 1_800_000_000n;
  const context = { nowSeconds: now, purpose: "shared-control", chainId: 31337, jws: verifier };
  const claims = (extra: Record<string, unknown> = {}) => ({
    oma3_proof_purpose: "shared-control",
    iss: "did:web:example.com",
    aud: "did:artifact:x",
    iat: Number(now - 10n),
    exp: Number(now + 600n),
    ...extra,
  });

  test("a pop-jws names its did:jwk signer; an ES256K key also speaks for its did:pkh", async () => {
    const ed = await webCryptoSigner("EdDSA");
    const edProof = await compactJws(ed, claims());
    expect(await verifyProofWrapper({ proofType: "pop-jws", proofObject: edProof.jws }, context)).toEqual({
      proofType: "pop-jws",
      signers: [(jwkToDidJwk(ed.jwk, { publicOnly: true }) as { value: string }).value],
      audiences: ["did:artifact:x"],
    });
    const k1 = secp256k1Signer();
    const k1Proof = await compactJws(k1, claims({ aud: ["did:artifact:x", "did:web:other"] }));
    const verified = await verifyProofWrapper({ proofType: "pop-jws", proofPurpose: "shared-control", proofObject: k1Proof.jws }, context);
    expect(verified?.signers[1]).toBe(`did:pkh:eip155:31337:${privateKeyToAccount(PRIVATE_KEY).address.toLowerCase()}`);
    expect(verified?.audiences).toEqual(["did:artifact:x", "did:web:other"]);
  });

  test("missing claims, an expired token, another purpose or a missing key are refused", async () => {
    const signer = await webCryptoSigner("ES256");
    for (const payload of [
      claims({ exp: Number(now - 1n) }),
      claims({ oma3_proof_purpose: "commercial-tx" }),
      { ...claims(), iss: undefined },
      { ...claims(), aud: undefined },
      { ...claims(), iat: undefined },
    ]) {
      const { jws } = await compactJws(signer, payload);
      expect(await verifyProofWrapper({ proofType: "pop-jws", proofObject: jws }, context)).toBeUndefined();
    }
    const noKey = `${part({ alg: "ES256" })}.${part(claims())}.${b64(new Uint8Array(64))}`;
    expect(await verifyProofWrapper({ proofType: "pop-jws", proofObject: noKey }, context)).toBeUndefined();
    const none = `${part({ alg: "none", jwk: signer.jwk })}.${part(claims())}.${b64(new Uint8Array(64))}`;
    expect(await verifyProofWrapper({ proofType: "pop-jws", proofObject: none }, context)).toBeUndefined();
  });
});
