import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { createSqliteOAuth } from "./sqlite_oauth.ts";

// The behaviour shared with PostgreSQL is in ../test_support/oauth_contract.ts; this file covers SQLite's own migration.
describe("createSqliteOAuth()", () => {
  test("a file made before codes kept whether redirect_uri was named gains the column; its codes read as named (the token request must name it, as before)", async () => {
    const db = new Database(":memory:", { strict: true });
    db.exec(`CREATE TABLE oauth_codes (
       code_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, account_id TEXT NOT NULL, redirect_uri TEXT NOT NULL, scope TEXT NOT NULL,
       code_challenge TEXT NOT NULL, resource TEXT, created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, used_at_ms INTEGER, grant_id TEXT
     )`);
    db.query(`INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, scope, code_challenge, resource, created_at_ms, expires_at_ms)
      VALUES ('old', 'c', 'a', 'https://app.test/cb', 'account:read', ?, NULL, 1, 60001)`).run("c".repeat(43));
    // A file made before open clients could be evicted (attack review, finding 4).
    db.exec(`CREATE TABLE oauth_clients (
       client_id TEXT PRIMARY KEY, account_id TEXT, secret_hash TEXT, name TEXT, redirect_uris TEXT NOT NULL, grant_types TEXT NOT NULL,
       scope TEXT NOT NULL, auth_method TEXT NOT NULL, registered_by TEXT, created_at_ms INTEGER NOT NULL, granted_at_ms INTEGER
     )`);
    db.query(`INSERT INTO oauth_clients (client_id, account_id, secret_hash, name, redirect_uris, grant_types, scope, auth_method, registered_by, created_at_ms)
      VALUES ('c', NULL, NULL, 'Old', '["https://app.test/cb"]', 'authorization_code refresh_token', 'account:read', 'none', '10.0.0.1', 1)`).run();
    const oauth = createSqliteOAuth(db);
    const columns = db.query<{ name: string }, []>("PRAGMA table_info(oauth_codes)").all().map((c) => c.name);
    expect(columns).toContain("redirect_uri_omitted");
    expect(await oauth.findCode("old")).toMatchObject({ redirectUri: "https://app.test/cb", redirectUriGiven: true });
    expect(db.query<{ name: string }, []>("PRAGMA table_info(oauth_clients)").all().map((c) => c.name)).toEqual(expect.arrayContaining(["evicted_at_ms", "registered_network"]));
    expect(await oauth.findClient("c")).toMatchObject({ clientId: "c", name: "Old" });
    // Opening the file again changes nothing.
    createSqliteOAuth(db);
    expect(db.query<{ name: string }, []>("PRAGMA table_info(oauth_codes)").all().map((c) => c.name)).toEqual(columns);
    expect(db.query<{ name: string }, []>("PRAGMA table_info(oauth_clients)").all().filter((c) => c.name === "evicted_at_ms" || c.name === "registered_network")).toHaveLength(2);
    db.close();
  });
});
