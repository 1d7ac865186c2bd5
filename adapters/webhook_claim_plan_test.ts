/**
 * A webhook claim visits only the endpoints with something pending (issue 43's claims, second pass): the walk over
 * them is one index step each, never a scan of every endpoint. Before, each claim (twice a second, and after every
 * attempt) asked every enabled endpoint in turn: 10,000 idle endpoints, free to register, held SQLite's one writer
 * and the service's event loop about 100 ms a claim. Asserted on the plan and the outcome, never on a time.
 */
import { expect, test } from "bun:test";
import { openSqlite, openSqliteStorage } from "./sqlite/mod.ts";
import { pendingEndpointsSql } from "./sql/webhooks.ts";
import { tempDirs } from "../e2e/support/temp_dirs.ts";

const dirs = tempDirs("ats-claim-plan-");

test("sqlite: the claim walks the pending deliveries' index, with no scan of the endpoints and no sort", async () => {
  const file = `${dirs()}/ats.sqlite`;
  const storage = await openSqliteStorage(file);
  const db = openSqlite(file);
  try {
    const endpoint = db.query(
      `INSERT INTO webhook_endpoints (id, account_id, url, secret, events, subjects, own_subjects, disabled, created_at_ms)
       VALUES (?, ?, 'https://hooks.example/', 'whsec_x', '["webhook.test"]', '[]', 0, 0, 0)`,
    );
    db.transaction(() => {
      for (let i = 0; i < 2_000; i++) endpoint.run(`wh_idle_${String(i).padStart(5, "0")}`, `acc_${i % 200}`);
    })();
    endpoint.run("wh_busy", "acc_busy");
    const message = { id: "msg_1", type: "webhook.test" as const, body: JSON.stringify({ type: "webhook.test", timestamp: "x", data: { url: "https://hooks.example/" } }), createdAtMs: 500 };
    await storage.webhooks.publish([message], [{ messageId: message.id, endpointId: "wh_busy" }], []);
    db.exec("ANALYZE");
    const plan = db.query<{ detail: string }, [number]>(`EXPLAIN QUERY PLAN ${pendingEndpointsSql("?1", "sqlite")}`).all(1_000).map((r) => r.detail).join("\n");
    expect({ plan, walk: /SEARCH p USING COVERING INDEX webhook_deliveries_pending \(endpoint_id>\?\)/.test(plan) }).toMatchObject({ walk: true });
    expect({ plan, scan: /SCAN (e|webhook_endpoints)\b/.test(plan) }).toMatchObject({ scan: false });
    expect({ plan, sort: plan.includes("TEMP B-TREE") }).toMatchObject({ sort: false });
    const claimed = await storage.webhooks.claim("w1", 1_000, 60_000, 8, 4, 8);
    expect(claimed.map((d) => [d.endpointId, d.message.id])).toEqual([["wh_busy", "msg_1"]]);
  } finally {
    db.close();
    await storage.close();
  }
});
