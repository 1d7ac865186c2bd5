/** A JWS verifier that answers `accept(check)` (default: every signature is valid) and records the checks. */
export function fakeJwsVerifier(accept: (check: import("../jws_verifier.ts").JwsSignatureCheck) => boolean = () => true) {
  const verifier = {
    checks: [] as import("../jws_verifier.ts").JwsSignatureCheck[],
    verify(check: import("../jws_verifier.ts").JwsSignatureCheck) {
      verifier.checks.push(check);
      return Promise.resolve(accept(check));
    },
  };
  return verifier satisfies import("../jws_verifier.ts").JwsVerifier;
}
