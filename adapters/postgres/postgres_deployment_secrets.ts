import type { SQL } from "bun";
import type { DeploymentSecrets } from "../../ports/deployment_secrets.ts";
import { deploymentSecretsTable } from "../sql/deployment_secrets.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The table, created with the storage's migrations. */
export const DEPLOYMENT_SECRETS_TABLE = deploymentSecretsTable(POSTGRES_WORDS);

/**
 * Secrets of the deployment in PostgreSQL, shared by every instance: the first instance to store one wins
 * (`ON CONFLICT DO NOTHING`), and every instance reads that one.
 */
export function createPostgresDeploymentSecrets(sql: SQL): DeploymentSecrets {
  return {
    async secret(name, candidate) {
      await sql`INSERT INTO deployment_secrets (name, secret) VALUES (${name}, ${candidate}) ON CONFLICT (name) DO NOTHING`;
      const rows = await sql`SELECT secret FROM deployment_secrets WHERE name = ${name}` as { secret: Uint8Array }[];
      return new Uint8Array(rows[0]!.secret);
    },
  };
}
