/**
 * Routing and the app's guards see one and the same path whatever the `Host` (issue 15): raw HTTP/1.1 over a
 * TCP socket (fetch would normalize the Host) with hosts of 1 to 3 characters, odd hosts, absolute-form targets
 * and trailing slashes. A signed-in wallet that its domain's TXT record names as controller sends every variant
 * cross-origin as `text/plain` with its session cookie: if any reached the witness or logout route, a witness
 * would be written or the session ended. None does, and the same witness from the allowed origin is written.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { fetchSession, requestControllerWitness, signInWithWallet, type WalletSession } from "../client/session.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
const wallet = privateKeyToAccount(generatePrivateKey());
const subjectDid = "did:web:hosts.test";

let dns: DnsServer;
let stack: Stack;
let session: WalletSession;
let controllerDid: string;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      WITNESS_USER_RATE_PER_MINUTE: "1000",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "1000",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "1000",
    },
  });
  controllerDid = `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`;
  dns.setTxt("_controllers.hosts.test", [[`v=1;controller=${controllerDid}`]]);
  session = await signInWithWallet({
    walletDid: controllerDid,
    domain: "app.test",
    uri: `${APP}/login`,
    sign: (message) => wallet.signMessage({ message }),
  }, { baseUrl: stack.baseUrl, origin: APP });
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

/** Sends one raw request and returns the status code and the body. */
function raw(lines: string[], body = ""): Promise<{ status: number; body: string }> {
  const { port } = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("utf8")));
    socket.on("error", reject);
    socket.on("end", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
    const head = [...lines, "Connection: close", ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []), "", ""].join("\r\n");
    // Written, not ended: a half-closed socket lets the server drop a request still being answered.
    socket.write(head + body);
  });
}

/** A cross-site form's request: another origin, `text/plain`, the victim's cookie. */
const crossSite = (target: string, host: string) => [
  `POST ${target} HTTP/1.1`,
  `Host: ${host}`,
  "Origin: https://evil.test",
  "Content-Type: text/plain",
  `Cookie: ${session.cookie}`,
];

const HOSTS = ["a", "ab", "abc", "abcd", "localhost", "a:1", "[::1]", ""];

describe("short Host headers and absolute-form targets", () => {
  for (const host of HOSTS.slice(0, 4)) {
    test(`Host: ${host} routes the same paths as a normal Host`, async () => {
      expect((await raw(["GET /v1/trust-anchors HTTP/1.1", `Host: ${host}`])).status).toBe(200);
      expect((await raw(["GET /healthz HTTP/1.1", `Host: ${host}`])).status).toBe(200);
      expect((await raw(["GET /v1/nonce?attester=0x0000000000000000000000000000000000000001 HTTP/1.1", `Host: ${host}`])).status).toBe(200);
    });
  }

  test("an absolute-form target naming a short host is routed by its path", async () => {
    expect((await raw(["GET http://a/v1/trust-anchors HTTP/1.1", "Host: a"])).status).toBe(200);
    expect((await raw(["GET https://a/v1/trust-anchors HTTP/1.1", "Host: a"])).status).toBe(200);
  });
});

describe("a cross-site POST with the session cookie reaches no guarded route, whatever the Host and path", () => {
  const witness = () => JSON.stringify({ subjectDid, controllerDid });
  /** Paths that must be unknown (404) and the guarded ones themselves (403 from the origin check). */
  const unknown = [
    "/xx/v1/controller-witness",
    "/x/v1/controller-witness",
    "/v1/controller-witness/",
    "/api/private/controller-witness/",
    "/v1//controller-witness",
    "/xx/v1/session/logout",
    "/v1/session/logout/",
    "/api/private/session/logout/",
    "/api/private/subjects/",
  ];
  const guarded = ["/v1/controller-witness", "/api/private/controller-witness", "/v1/session/logout", "/api/private/subjects"];

  for (const host of HOSTS) {
    test(`Host: ${JSON.stringify(host)}`, async () => {
      for (const path of unknown) {
        const answer = await raw(crossSite(path, host), witness());
        // With an empty Host the request's URL is its path alone, read as the path it is (routing and guards alike):
        // before, its first segment was taken for a host (`/xx/v1/x` read as `/v1/x`), and a bare `/readyz` as `/`.
        expect([path, answer.status]).toEqual([path, 404]);
        expect(JSON.parse(answer.body)).toMatchObject({ code: "NOT_FOUND" });
      }
      for (const path of guarded) {
        const answer = await raw(crossSite(path, host), witness());
        expect([path, answer.status]).toEqual([path, 403]);
        expect(JSON.parse(answer.body)).toMatchObject({ code: "ORIGIN_NOT_ALLOWED" });
      }
    });
  }

  test("absolute-form targets", async () => {
    for (const target of ["http://a/xx/v1/controller-witness", "http://a/v1/controller-witness/", "https://ab/xx/v1/session/logout", "http://abc/v1/session/logout/"]) {
      const answer = await raw(crossSite(target, "a"), witness());
      expect([target, answer.status]).toEqual([target, 404]);
    }
    for (const target of ["http://a/v1/controller-witness", "http://a/v1/session/logout"]) {
      const answer = await raw(crossSite(target, "a"), witness());
      expect([target, answer.status]).toEqual([target, 403]);
    }
  });

  test("nothing was written and the session is still alive; the allowed origin gets its witness", async () => {
    const options = { baseUrl: stack.baseUrl, origin: APP };
    expect((await fetchSession(session, options)).quota).toMatchObject({ used: 0, reserved: 0 });
    // The control: the same request through the front door is written, so the attempts above could have been.
    const written = await requestControllerWitness({ subjectDid, controllerDid }, session, options);
    expect(written).toMatchObject({ success: true });
    expect((await fetchSession(session, options)).quota).toMatchObject({ used: 1, reserved: 0 });
  });
});
