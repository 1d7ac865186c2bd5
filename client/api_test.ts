import { describe, expect, test } from "bun:test";
import { addSubject, countAttestations, discoverControllers, getAttestation, listAttestations, requestWitness, verifySubjectOwnership, writeReview } from "./api.ts";
import { fetchControllerAuthorization } from "./controller_authorization.ts";
import { fetchKeyStatus, isKeyAuthorized } from "./keys.ts";
import { isAtsClientError } from "./errors.ts";

describe("writeReview() (the console's review form)", () => {
  const contract = "0x2222222222222222222222222222222222222222";
  const txHash = `0x${"cd".repeat(32)}`;

  test("a transaction on another chain than a did:pkh subject's is refused with the chain rule's reason, nothing fetched or signed (issue 33)", async () => {
    const calls: string[] = [];
    const fetch = ((url: string) => (calls.push(`fetch ${url}`), Promise.reject(new Error("not expected")))) as unknown as typeof globalThis.fetch;
    const sign = () => (calls.push("sign"), Promise.resolve(`0x${"00".repeat(65)}` as const));
    const written = writeReview({
      subject: `did:pkh:eip155:1:${contract}`,
      ratingValue: 4,
      transaction: { chainId: 31337, txHash },
      attester: "0x1111111111111111111111111111111111111111",
      sign,
    }, { baseUrl: "http://ats.test", fetch });
    const error = await written.then(() => undefined, (e: unknown) => e);
    expect(isAtsClientError(error) ? [error.code, error.message] : error).toEqual([
      "INVALID_INPUT",
      `proofs: the transaction is on eip155:31337, not on did:pkh:eip155:1:${contract}'s chain eip155:1`,
    ]);
    expect(calls).toEqual([]);
  });
});

describe("the attestation queries (issue 37)", () => {
  test("listAttestations, countAttestations and getAttestation send the filters as the routes take them", async () => {
    const urls: string[] = [];
    const fetch = ((url: string) => {
      urls.push(url);
      return Promise.resolve(new Response(JSON.stringify({ items: [], nextCursor: null, count: 0 }), { headers: { "content-type": "application/json" } }));
    }) as unknown as typeof globalThis.fetch;
    const options = { baseUrl: "http://ats.test", fetch };
    await listAttestations({ attester: "0xAb", schema: "user-review", revoked: false, since: 5, order: "oldest", limit: 10, cursor: "c.1" }, options);
    await listAttestations({ subject: "did:web:a.example" }, options);
    await countAttestations({ recipient: "0xcd", revoked: true, until: 9 }, options);
    await getAttestation(`0x${"1".repeat(64)}`, options);
    expect(urls).toEqual([
      "http://ats.test/v1/attestations?attester=0xAb&schema=user-review&revoked=false&since=5&order=oldest&limit=10&cursor=c.1",
      "http://ats.test/v1/attestations?subject=did%3Aweb%3Aa.example",
      "http://ats.test/v1/attestations/count?recipient=0xcd&revoked=true&until=9",
      `http://ats.test/v1/attestations/0x${"1".repeat(64)}`,
    ]);
  });
});

describe("the service's one subject rule, before any request (issue 43)", () => {
  const BAD = ["did:web:not a did", "did:web:exa\tmple.com", "did:web:a..b", "not a did", `did:pkh:eip155:01:0x${"1".repeat(40)}`];
  const KEY = "did:pkh:eip155:1:0x00000000000000000000000000000000000000aa";

  test("every helper that takes a subject throws INVALID_DID for one the service would refuse, and sends nothing", async () => {
    const urls: string[] = [];
    const fetch = ((url: string) => (urls.push(url), Promise.reject(new Error("not expected")))) as unknown as typeof globalThis.fetch;
    const options = { baseUrl: "http://ats.test", fetch };
    for (const subject of BAD) {
      const calls: [string, () => Promise<unknown>][] = [
        ["listAttestations", () => listAttestations({ subject }, options)],
        ["countAttestations", () => countAttestations({ subject }, options)],
        ["fetchKeyStatus", () => fetchKeyStatus({ subjectDid: subject, keyDid: KEY }, options)],
        ["isKeyAuthorized", () => isKeyAuthorized({ subjectDid: subject, keyDid: KEY }, options)],
        ["fetchControllerAuthorization", () => fetchControllerAuthorization({ subjectDid: subject, controllerDid: KEY }, options)],
        ["discoverControllers", () => discoverControllers(subject, options)],
        ["verifySubjectOwnership", () => verifySubjectOwnership({ subjectDid: subject, connectedWalletDid: KEY }, options)],
        ["requestWitness", () => requestWitness({ subjectDid: subject, controllerDid: KEY }, options)],
        ["addSubject", () => addSubject({ did: subject }, options)],
      ];
      for (const [name, call] of calls) {
        const error = await call().then(() => undefined, (e: unknown) => e);
        expect({ name, subject, code: isAtsClientError(error) ? error.code : String(error) }).toEqual({ name, subject, code: "INVALID_DID" });
      }
    }
    expect(urls).toEqual([]);
  });

  test("a DID and a bare domain are sent as given", async () => {
    const urls: string[] = [];
    const fetch = ((url: string) => {
      urls.push(url);
      return Promise.resolve(new Response(JSON.stringify({ items: [], nextCursor: null, count: 0 }), { headers: { "content-type": "application/json" } }));
    }) as unknown as typeof globalThis.fetch;
    await listAttestations({ subject: "shop.example" }, { baseUrl: "http://ats.test", fetch });
    await countAttestations({ subject: "did:web:shop.example" }, { baseUrl: "http://ats.test", fetch });
    expect(urls).toEqual(["http://ats.test/v1/attestations?subject=shop.example", "http://ats.test/v1/attestations/count?subject=did%3Aweb%3Ashop.example"]);
  });
});
