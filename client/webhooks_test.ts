import { describe, expect, test } from "bun:test";
import { isAtsClientError } from "./errors.ts";
import {
  createWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  sendTestWebhook,
  updateWebhook,
} from "./webhooks.ts";

type Sent = { method: string; url: string; body: string | undefined; headers: Record<string, string> };

function recording(answer: (sent: Sent) => Response = () => Response.json({})) {
  const sent: Sent[] = [];
  const fetch = ((url: string, init: RequestInit) => {
    const one = { method: String(init.method), url, body: init.body === undefined ? undefined : String(init.body), headers: { ...(init.headers as Record<string, string>) } };
    sent.push(one);
    return Promise.resolve(answer(one));
  }) as unknown as typeof globalThis.fetch;
  return { sent, options: { baseUrl: "http://ats.test", fetch, cookie: "ats_session=s", origin: "http://ats.test" } };
}

describe("the webhook helpers (issue 35, the console's Webhooks section)", () => {
  test("each helper calls its route of decisions §22 with the session, the body as JSON and the id escaped", async () => {
    const { sent, options } = recording((s) => Response.json(s.url.endsWith("/api/private/webhooks") && s.method === "GET" ? { webhooks: [] } : {}));
    await createWebhook({ url: "https://hooks.example/a", events: ["attestation.created"], subjects: ["did:web:a.example"], ownSubjects: false }, options);
    expect(await listWebhooks(options)).toEqual([]);
    await updateWebhook("wh_1", { disabled: true }, options);
    await rotateWebhookSecret("wh_1", options);
    await sendTestWebhook("wh_1", options);
    await listWebhookDeliveries("wh_1", {}, options);
    await listWebhookDeliveries("wh/2", { limit: 10, cursor: "c+1" }, options);
    await deleteWebhook("wh_1", options);
    expect(sent.map((s) => `${s.method} ${s.url} ${s.body ?? ""}`)).toEqual([
      'POST http://ats.test/api/private/webhooks {"url":"https://hooks.example/a","events":["attestation.created"],"subjects":["did:web:a.example"],"ownSubjects":false}',
      "GET http://ats.test/api/private/webhooks ",
      'PATCH http://ats.test/api/private/webhooks/wh_1 {"disabled":true}',
      "POST http://ats.test/api/private/webhooks/wh_1/rotate-secret {}",
      "POST http://ats.test/api/private/webhooks/wh_1/test {}",
      "GET http://ats.test/api/private/webhooks/wh_1/deliveries ",
      "GET http://ats.test/api/private/webhooks/wh%2F2/deliveries?limit=10&cursor=c%2B1 ",
      "DELETE http://ats.test/api/private/webhooks/wh_1 ",
    ]);
    expect(sent.every((s) => s.headers.cookie === "ats_session=s" && s.headers.origin === "http://ats.test")).toBe(true);
  });

  test("a refusal throws the service's code and message", async () => {
    const { options } = recording(() => Response.json({ code: "INVALID_INPUT", error: "url must be https://" }, { status: 400 }));
    const error = await createWebhook({ url: "ftp://x", events: ["webhook.test"] }, options).then(() => undefined, (e: unknown) => e);
    expect(isAtsClientError(error) ? [error.code, error.message] : error).toEqual(["INVALID_INPUT", "url must be https://"]);
  });
});
