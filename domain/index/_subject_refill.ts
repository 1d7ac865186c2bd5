/**
 * The stored subjects kept to the rule (issue 43), a bounded share in each follower step: the rule checked against the
 * store's, a forgetting under way gone on, rows without a subject filled. The step then goes on as any other (ingests,
 * or completes a poll at the head), so a refill never holds back the index: before, steps that filled returned before
 * ingesting and no poll completed until every row was filled, and reads were 503 `INDEX_STALE` after
 * `INDEX_STALL_SECONDS` of it.
 */
import type { IndexStore } from "../../ports/attestation_index.ts";
import { type SubjectOf, subjectsToForget } from "./record_subject.ts";

/** How many stored rows one step gives their subject (no chain read, so more than the records' 200). */
const SUBJECT_FILL_BATCH = 1_000;
/** How many stored rows one step goes through of a forgetting: bounded statements (about 20 ms on SQLite when all go). */
const SUBJECT_FORGET_BATCH = 1_000;

/** What one step did to the stored subjects. */
export type SubjectRefill = {
  /** Subjects stored on rows that had none (stored before subjects were kept, or forgotten after a change of rule). */
  readonly subjectsFilled?: number | undefined;
  /** Stored subjects forgotten after a change of rule (they are filled again). */
  readonly subjectsForgotten?: number | undefined;
  /** More is left to forget or fill: the next step goes on with it (its poll goes on at once). */
  readonly subjectsPending?: true | undefined;
};

/** The refill of one follower; without a subject rule or a store that keeps subjects, it does nothing. */
export function createSubjectRefill(deps: {
  readonly store: IndexStore;
  readonly subjectOf?: (SubjectOf & { readonly rule?: string | undefined }) | undefined;
}): () => Promise<SubjectRefill> {
  const { unsubjected, setSubjects, resetSubjectsUnless, forgetSubjects } = deps.store;
  const subjectOf = deps.subjectOf;
  if (subjectOf === undefined || unsubjected === undefined || setSubjects === undefined) return () => Promise.resolve({});
  const rule = subjectOf.rule;
  const ruled = rule !== undefined && resetSubjectsUnless !== undefined && forgetSubjects !== undefined;
  return async function refill() {
    let forgotten: number | undefined;
    let forgetting = false;
    // Checked at every step (one primary-key read), not once a process: another instance may have changed the rule
    // since, one of the earlier version restarted during a rolling upgrade among them (docs/deployment.md).
    if (ruled && (await resetSubjectsUnless(rule, (kept) => subjectsToForget(kept, rule)))) {
      const gone = await forgetSubjects(SUBJECT_FORGET_BATCH);
      forgotten = gone.forgotten;
      forgetting = !gone.done;
    }
    // Rows a forgetting has gone past are filled meanwhile: it never comes back to them.
    const rows = await unsubjected(SUBJECT_FILL_BATCH);
    if (rows.length > 0) await setSubjects(rows.map((r) => ({ uid: r.uid, subject: subjectOf(r) })));
    return {
      ...(forgotten === undefined ? {} : { subjectsForgotten: forgotten }),
      ...(rows.length === 0 ? {} : { subjectsFilled: rows.length }),
      ...(forgetting || rows.length === SUBJECT_FILL_BATCH ? { subjectsPending: true as const } : {}),
    };
  };
}
