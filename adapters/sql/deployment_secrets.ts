/** What SQLite and PostgreSQL share for the deployment's secrets: their table. */
import type { SqlWords } from "./schema.ts";

/** A secret per name, the first one stored (issue 43 item 10). */
export const deploymentSecretsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS deployment_secrets (name TEXT PRIMARY KEY, secret ${w.bytes} NOT NULL)`;
