// Runs the official @x402/extensions JWS verifiers under Node, where jose 5 takes its node:crypto build
// (OpenSSL has secp256k1). Under Bun jose takes its WebCrypto build, which has no ES256K.
// stdin: [{ kind: "offer" | "receipt", artifact, jwk? }]; stdout: [{ ok: true, payload } | { ok: false, error }].
// Without `jwk` the key comes from the JWS kid (the official did:key / did:jwk / did:web resolver).
import { verifyOfferSignatureJWS, verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const { kind, artifact, jwk } of JSON.parse(input)) {
  try {
    const verify = kind === "offer" ? verifyOfferSignatureJWS : verifyReceiptSignatureJWS;
    results.push({ ok: true, payload: await verify(artifact, jwk) });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
