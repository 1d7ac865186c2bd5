import type { SQL } from "bun";
import { createHash } from "node:crypto";

/**
 * Applies `statements` (idempotent DDL) under the transaction-scoped advisory lock `lock`, unless the database
 * already holds exactly this list: its digest is recorded under `name` in `schema_migrations`. So only the first
 * instance of a deployment (or the first start after an upgrade) runs DDL. Another instance starting beside running
 * ones takes no table lock: an `ALTER TABLE … IF NOT EXISTS` still locks its table exclusively, and against a
 * running instance's transaction over two tables that could deadlock, so that PostgreSQL aborted the start-up.
 */
export async function migrate(sql: SQL, options: { readonly name: string; readonly lock: number; readonly statements: readonly string[] }): Promise<void> {
  const digest = createHash("sha256").update(options.statements.join("\n;\n")).digest("hex");
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${options.lock})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, digest TEXT NOT NULL)`;
    const rows: { digest: string }[] = await tx`SELECT digest FROM schema_migrations WHERE name = ${options.name}`;
    if (rows[0]?.digest === digest) return;
    for (const statement of options.statements) await tx.unsafe(statement);
    await tx`INSERT INTO schema_migrations (name, digest) VALUES (${options.name}, ${digest})
             ON CONFLICT (name) DO UPDATE SET digest = EXCLUDED.digest`;
  });
}
