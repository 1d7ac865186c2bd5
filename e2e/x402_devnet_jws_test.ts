/**
 * `X402_SIGNING_FORMAT=jws` on the embedded devnet with no key given (docs/x402.md): the devnet makes an ES256 key once,
 * in DATA_DIR (owner-only), and did.json publishes it. Before, the switch was ignored: the witness's Ethereum signer
 * went on signing EIP-712 offers and did.json named it.
 */
import { afterAll, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { tempDirs } from "./support/temp_dirs.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";

const dirs = tempDirs("ats-x402-jws-");
let service: ServiceProcess | undefined;
afterAll(async () => {
  await service?.stop();
});

test("the devnet's JWS key is made in DATA_DIR and did.json names it as a JsonWebKey2020", async () => {
  const home = dirs();
  const dir = join(home, "data");
  service = await startServiceProcess({ HOME: home, DATA_DIR: dir, PORT: "0", LOG_LEVEL: "error", X402_SIGNING_FORMAT: "jws" }, 60_000);
  // The folder the service made (the devnet's files first): its owner's alone, as the database in it holds secrets.
  expect((statSync(dir).mode & 0o777).toString(8)).toBe("700");
  const doc = await (await fetch(`${service.url}/.well-known/did.json`)).json() as { verificationMethod: { type: string; publicKeyJwk?: { kty: string; crv: string } }[] };
  expect(doc.verificationMethod.map((m) => [m.type, m.publicKeyJwk?.kty, m.publicKeyJwk?.crv])).toEqual([["JsonWebKey2020", "EC", "P-256"]]);
  expect((statSync(join(dir, "x402_jws_key.json")).mode & 0o777).toString(8)).toBe("600");
}, 90_000);
