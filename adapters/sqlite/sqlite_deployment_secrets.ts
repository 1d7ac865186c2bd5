import type { Database } from "bun:sqlite";
import type { DeploymentSecrets } from "../../ports/deployment_secrets.ts";
import { deploymentSecretsTable } from "../sql/deployment_secrets.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** Secrets of the deployment in the SQLite file: one row a name, the first stored kept (`INSERT OR IGNORE`). */
export function createSqliteDeploymentSecrets(db: Database): DeploymentSecrets {
  db.exec(deploymentSecretsTable(SQLITE_WORDS));
  const insert = db.query("INSERT OR IGNORE INTO deployment_secrets (name, secret) VALUES (?, ?)");
  const read = db.query<{ secret: Uint8Array }, [string]>("SELECT secret FROM deployment_secrets WHERE name = ?");
  return {
    secret(name, candidate) {
      insert.run(name, candidate);
      return Promise.resolve(new Uint8Array(read.get(name)!.secret));
    },
  };
}
