/** Storage in PostgreSQL (Bun.SQL), for several instances sharing one database. */
export { ClockSkewError, openPostgresStorage } from "./postgres_storage.ts";
export { createPostgresIndexStore } from "./postgres_index_store.ts";
