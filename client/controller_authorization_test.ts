import { describe, expect, test } from "bun:test";
import { AtsClientError } from "./errors.ts";
import { fetchControllerAuthorization, resolveDidUrl } from "./controller_authorization.ts";

describe("controller authorization helpers", () => {
  test("fetchControllerAuthorization() asks the route with the purposes as a comma list; a refusal throws with its code", async () => {
    const urls: string[] = [];
    const fetch = ((url: string) => {
      urls.push(url);
      return Promise.resolve(url.includes("bad")
        ? Response.json({ error: "controllerDid is a DID URL", code: "INVALID_DID" }, { status: 400 })
        : Response.json({ authorized: true, keyPurposeStatus: "matched" }));
    }) as unknown as typeof globalThis.fetch;
    const answer = await fetchControllerAuthorization(
      { subjectDid: "did:web:a.test", controllerDid: "did:jwk:e30", purpose: ["authentication", "keyAgreement"], at: 1_800_000_000.7 },
      { baseUrl: "https://ats.test", fetch },
    );
    expect(answer).toMatchObject({ authorized: true });
    expect(urls[0]).toBe("https://ats.test/v1/controller-authorization?subjectDid=did%3Aweb%3Aa.test&controllerDid=did%3Ajwk%3Ae30&purpose=authentication%2CkeyAgreement&at=1800000000");
    const refused = fetchControllerAuthorization({ subjectDid: "did:web:a.test", controllerDid: "bad" }, { baseUrl: "https://ats.test", fetch });
    expect(refused).rejects.toBeInstanceOf(AtsClientError);
    await resolveDidUrl("did:web:a.test#key-1", { baseUrl: "https://ats.test", fetch });
    expect(urls.at(-1)).toBe("https://ats.test/v1/did-url/resolve?didUrl=did%3Aweb%3Aa.test%23key-1");
  });
});
