/**
 * The audit trail and the health of every signature (decisions §27): one `signature` log event per signature (role,
 * backend, key, purpose, digest, the submission or request id), `ats_signatures_total{role,backend,outcome}` and
 * `ats_signature_duration_seconds{role,backend}` in /metrics, the `SIGNER_TIMEOUT_MS` deadline, and the failure a
 * throw of a backend becomes (never its text in an answer: it may name a URL, a key id or a module path).
 */
import type { Logger } from "../../ports/logger.ts";
import type { Metrics } from "../../ports/metrics.ts";
import type { SignContext, SignerBackend, SignerFailure, SignerRole, SignerState } from "../../ports/signer.ts";
import { SignerError } from "./_digest_signer.ts";

/** What the audit needs from the service. */
export type SignerAuditDeps = {
  readonly log: Logger;
  readonly metrics?: Metrics | undefined;
  /** A signature not given within this many milliseconds is a failure (`SIGNER_TIMEOUT_MS`, default 5000). */
  readonly timeoutMs: number;
  /** The clock of the pause after a timeout (tests); default `performance.now()`. */
  readonly nowMs?: (() => number) | undefined;
};

/** Which key signs: role, backend and the key's public name (an address or a JWK thumbprint). */
export type SignerIdentity = { readonly role: SignerRole; readonly backend: SignerBackend; readonly key: string };

/** The counter and histogram names (app/metrics.ts describes them). */
export const SIGNATURES_TOTAL = "ats_signatures_total";
export const SIGNATURE_DURATION = "ats_signature_duration_seconds";

/** Runs signatures of one key under the audit; `state()` is what `/readyz` shows. */
export type Audited = {
  readonly run: <T extends { readonly ok: true }>(
    context: SignContext,
    sign: () => Promise<T & { readonly digest: string }>,
  ) => Promise<T | SignerFailure>;
  readonly state: () => SignerState;
};

/** Builds the audit of one key. */
export function createAudit(identity: SignerIdentity, deps: SignerAuditDeps): Audited {
  let state: SignerState = "unknown";
  const labels = { role: identity.role, backend: identity.backend };
  const local = identity.backend === "env" || identity.backend === "keystore";
  const now = deps.nowMs ?? (() => performance.now());
  /**
   * After a remote signer's timeout, it is not asked again for one more `timeoutMs`: the signatures waiting behind it
   * (a wallet's sends queue for its nonce) fail at once instead of each waiting out its own deadline, so the 50th
   * of 50 writes was answered after 50 deadlines (250 s at the default) while the wallet's nonce lock was held.
   */
  let pausedUntil = Number.NEGATIVE_INFINITY;
  return {
    state: () => state,
    async run<T extends { readonly ok: true }>(context: SignContext, sign: () => Promise<T & { readonly digest: string }>): Promise<T | SignerFailure> {
      const started = performance.now();
      let outcome: "ok" | SignerFailure["reason"];
      let result: (T & { readonly digest: string }) | undefined;
      let why: string | undefined;
      try {
        if (!local && now() < pausedUntil) throw new SignerError("timeout", "The signer timed out moments ago; not asked again yet");
        // A key in this process answers at once: no timer on the hot path of env: and keystore: keys.
        result = local ? await sign() : await withDeadline(sign(), deps.timeoutMs);
        outcome = "ok";
      } catch (error) {
        outcome = failureReason(error);
        why = error instanceof Error ? error.message : String(error);
        if (!local && outcome === "timeout" && now() >= pausedUntil) pausedUntil = now() + deps.timeoutMs;
      }
      const seconds = (performance.now() - started) / 1000;
      deps.metrics?.increment(SIGNATURES_TOTAL, { ...labels, outcome });
      deps.metrics?.observe(SIGNATURE_DURATION, seconds, labels);
      state = outcome === "ok" ? "up" : "down";
      if (result !== undefined) {
        deps.log.info("signature", {
          role: identity.role,
          backend: identity.backend,
          key: identity.key,
          purpose: context.purpose,
          digest: result.digest,
          ...(context.ref === undefined ? {} : { ref: context.ref }),
        });
        const { digest: _, ...value } = result;
        return value as unknown as T;
      }
      deps.log.warn("signature_failed", {
        role: identity.role,
        backend: identity.backend,
        key: identity.key,
        purpose: context.purpose,
        reason: outcome,
        error: why,
        ...(context.ref === undefined ? {} : { ref: context.ref }),
      });
      return { ok: false, reason: outcome as SignerFailure["reason"] };
    },
  };
}

/** The failure a backend's throw stands for: its SignerError's kind; anything else (a network error) is "unavailable". */
export function failureReason(error: unknown): SignerFailure["reason"] {
  if (error instanceof SignerError) return error.kind === "config" ? "refused" : error.kind;
  return "unavailable";
}

/** `promise`, or a SignerError "timeout" after `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SignerError("timeout", `The signer did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** 0x-prefixed lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): `0x${string}` {
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
}
