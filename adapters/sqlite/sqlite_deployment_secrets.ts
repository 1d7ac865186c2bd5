import type { Database } from "bun:sqlite";
import type { DeploymentSecrets } from "../../ports/deployment_secrets.ts";

/** Secrets of the deployment in the SQLite file: one row a name, the first stored kept (`INSERT OR IGNORE`). */
export function createSqliteDeploymentSecrets(db: Database): DeploymentSecrets {
  db.exec("CREATE TABLE IF NOT EXISTS deployment_secrets (name TEXT PRIMARY KEY, secret BLOB NOT NULL)");
  const insert = db.query("INSERT OR IGNORE INTO deployment_secrets (name, secret) VALUES (?, ?)");
  const read = db.query<{ secret: Uint8Array }, [string]>("SELECT secret FROM deployment_secrets WHERE name = ?");
  return {
    secret(name, candidate) {
      insert.run(name, candidate);
      return Promise.resolve(new Uint8Array(read.get(name)!.secret));
    },
  };
}
