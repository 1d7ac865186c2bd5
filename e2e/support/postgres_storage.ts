/**
 * The service's PostgreSQL storage for one test file: a throwaway server ({@link startPostgres}), the storage opened on
 * it and one raw connection (plans, triggers, statistics), started before the file's tests and stopped after them.
 * Nothing starts where PostgreSQL is not installed; `skip` says why, for `describe.skipIf`.
 */
import { afterAll, beforeAll } from "bun:test";
import { SQL } from "bun";
import { openPostgresStorage } from "../../adapters/postgres/mod.ts";
import type { Storage } from "../../ports/storage.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "./postgres.ts";

/** What {@link postgresForTests} gives a test file. */
export type PostgresForTests = {
  /** Why PostgreSQL cannot run here, or undefined. */
  readonly skip: string | undefined;
  /** The service's storage on the server (throws outside the file's tests, or when skipped). */
  readonly storage: () => Storage;
  /** One raw connection to the same database. */
  readonly raw: () => SQL;
};

/** Registers the file's `beforeAll` (start) and `afterAll` (stop); call it at the file's top level. */
export function postgresForTests(): PostgresForTests {
  const skip = postgresUnavailableReason();
  let pg: TestPostgres | undefined;
  let storage: Storage | undefined;
  let raw: SQL | undefined;
  beforeAll(async () => {
    if (skip !== undefined) return;
    pg = await startPostgres();
    storage = await openPostgresStorage(pg.url);
    raw = new SQL({ url: pg.url, max: 1 });
  });
  afterAll(async () => {
    await raw?.close();
    await storage?.close();
    await pg?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the test PostgreSQL is not running");
    return value;
  };
  return { skip, storage: () => started(storage), raw: () => started(raw) };
}
