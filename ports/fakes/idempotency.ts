import type { IdempotencyRecord, IdempotencyStore, ReopenedKey, StoredAnswer } from "../idempotency.ts";

/** Idempotency keys in memory, with the stores' rules (the record's `createdAtMs` is the time it is asked at). */
export function fakeIdempotencyStore() {
  type Held = IdempotencyRecord;
  const records = new Map<string, Held>();
  const id = (scope: string, key: string) => `${scope}\n${key}`;
  const store = {
    records,
    begin(record: Omit<Held, "state" | "answer" | "submissionId">) {
      const held = records.get(id(record.scope, record.key));
      const nowMs = record.createdAtMs;
      const expired = held !== undefined && held.expiresAtMs <= nowMs;
      const dead = held !== undefined && held.state === "running" && held.leaseUntilMs <= nowMs && held.fingerprint === record.fingerprint;
      if (held === undefined || expired) {
        records.set(id(record.scope, record.key), { ...record, state: "running", answer: null, submissionId: null });
        return Promise.resolve({ kind: "started" as const, submissionId: null });
      }
      if (dead) {
        records.set(id(record.scope, record.key), { ...held, leaseUntilMs: record.leaseUntilMs });
        return Promise.resolve({ kind: "started" as const, submissionId: held.submissionId });
      }
      return Promise.resolve({ kind: "exists" as const, record: held });
    },
    find(scope: string, key: string): Promise<Held | undefined> {
      return Promise.resolve(records.get(id(scope, key)));
    },
    attach(scope: string, key: string, submissionId: string) {
      const held = records.get(id(scope, key));
      if (held?.state === "running") records.set(id(scope, key), { ...held, submissionId });
      return Promise.resolve();
    },
    complete(scope: string, key: string, answer: StoredAnswer) {
      const held = records.get(id(scope, key));
      if (held?.state === "running") records.set(id(scope, key), { ...held, state: "done", answer });
      return Promise.resolve();
    },
    reopen(scope: string, key: string, taken: ReopenedKey) {
      const held = records.get(id(scope, key));
      const same = held?.state === "done" && held.fingerprint === taken.fingerprint && held.submissionId !== null &&
        held.expiresAtMs > taken.nowMs && JSON.stringify(held.answer) === JSON.stringify(taken.answer);
      if (!same) return Promise.resolve(false);
      records.set(id(scope, key), { ...held, state: "running", answer: null, leaseUntilMs: taken.leaseUntilMs });
      return Promise.resolve(true);
    },
    abandon(scope: string, key: string) {
      if (records.get(id(scope, key))?.state === "running") records.delete(id(scope, key));
      return Promise.resolve();
    },
    prune(nowMs: number) {
      let gone = 0;
      for (const [k, held] of records) if (held.expiresAtMs <= nowMs && records.delete(k)) gone++;
      return Promise.resolve(gone);
    },
    endLeases(nowMs: number) {
      let ended = 0;
      for (const [k, held] of records) {
        if (held.state === "running" && held.leaseUntilMs > nowMs) records.set(k, { ...held, leaseUntilMs: nowMs }), ended++;
      }
      return Promise.resolve(ended);
    },
  };
  return store satisfies IdempotencyStore;
}

/**
 * `store` whose key read (`find`) runs the hook given to `onRead` once it has read, then forgets the hook: what another
 * request does between one's read of a key and its take.
 */
export function withReadHook(store: ReturnType<typeof fakeIdempotencyStore>) {
  let afterRead: (() => Promise<void>) | undefined;
  const hooked = {
    ...store,
    find: async (scope: string, key: string) => {
      const found = await store.find(scope, key);
      const hook = afterRead;
      afterRead = undefined;
      await hook?.();
      return found;
    },
  };
  return { store: hooked, onRead: (hook: () => Promise<void>) => void (afterRead = hook) };
}
