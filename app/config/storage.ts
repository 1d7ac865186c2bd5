/** Where the service keeps its data: the `storage` section. */
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { choice, ConfigError, int, matching, optionalText, readSection, type ReadContext, text } from "./_declare.ts";

/** The `storage` section's variables. */
export const StorageSection = Type.Object({
  dataDir: text("DATA_DIR", { default: ".ats", description: "devnet state, deployment record, trust anchors and the default database" }),
  databasePath: text("DATABASE_PATH", {
    default: ({ values }) => join(String(values.dataDir), "ats.sqlite"),
    doc: "DATA_DIR/ats.sqlite",
    description: "the SQLite file",
  }),
  databaseUrl: optionalText("DATABASE_URL", {
    doc: "(none: SQLite)",
    description: "postgres://…: PostgreSQL storage shared by several instances",
    check: matching("DATABASE_URL", /^postgres(ql)?:\/\//, "expected a postgres:// URL"),
  }),
  walletLockSeconds: int("WALLET_LOCK_SECONDS", {
    default: 120,
    minimum: 1,
    maximum: 600,
    description: "PostgreSQL: the longest an instance may hold a wallet's nonce lock while it sends; past it the database ends its hold, so a frozen instance cannot stop the others' writes",
  }),
  // STORAGE=postgres: a deployment of several instances says so (deploy/compose.yaml, deploy/k8s), so one started
  // without its DATABASE_URL stops instead of serving from a SQLite file of its own (issue 45).
  storage: choice("STORAGE", ["postgres", "sqlite"], {
    default: undefined,
    doc: "(none: PostgreSQL when DATABASE_URL is set, else SQLite)",
    description: "the storage the deployment expects",
    reason: (value) => `expected postgres or sqlite, got "${value}"`,
  }),
}, { title: "storage" });

/** Where the service keeps its data. */
export type StorageConfig = Omit<Static<typeof StorageSection>, "storage">;

/** Reads the `storage` section; `STORAGE` must agree with `DATABASE_URL`. */
export function readStorage(ctx: Omit<ReadContext, "values">): StorageConfig {
  const { storage, ...section } = readSection(StorageSection, ctx);
  if (storage === "postgres" && section.databaseUrl === undefined) throw new ConfigError("DATABASE_URL", "required when STORAGE is postgres");
  if (storage === "sqlite" && section.databaseUrl !== undefined) throw new ConfigError("DATABASE_URL", "set, but STORAGE is sqlite");
  return section;
}
