/**
 * An Etherscan-compatible explorer API (decisions §29): `?module=account&action=txlist&address=…&sort=desc`, as
 * Etherscan and Blockscout serve it. The operator's explorers (`EXPLORER_API_URLS`) are trusted as configured and
 * fetched plainly; one an embed names goes through the pinned fetcher of did:web documents (a DNS name, public
 * addresses only, no redirects, a byte cap, one deadline). Nothing an explorer says leaves this adapter but the
 * candidates it lists; a failure is a reason, never its text.
 */
import type { DidDocumentFetch } from "../../ports/discovery.ts";
import { readCapped } from "./_read_capped.ts";
import type { ExplorerTx, ExplorerTxList } from "../../ports/interactions.ts";

/** Options of {@link createExplorerTxList}. */
export type ExplorerTxListOptions = {
  /** The SSRF-policed fetch of an https URL's JSON (adapters/https/https_did_document.ts `fetchJsonUrl`). */
  readonly pinned: (url: string) => Promise<DidDocumentFetch>;
  /** The operator's explorers are fetched with this; default the global fetch. */
  readonly fetch?: typeof fetch | undefined;
  /** Deadline of one operator request; default 5000 ms. */
  readonly timeoutMs?: number | undefined;
  /** Body cap of one operator answer; default 1 MiB. */
  readonly maxBytes?: number | undefined;
  /** Transactions asked for (newest first); default 100. */
  readonly pageSize?: number | undefined;
};

/** The txlist URL of an explorer API for an address. */
export function txlistUrl(apiUrl: string, address: string, pageSize: number): string {
  const url = new URL(apiUrl);
  url.searchParams.set("module", "account");
  url.searchParams.set("action", "txlist");
  url.searchParams.set("address", address);
  url.searchParams.set("sort", "desc");
  url.searchParams.set("page", "1");
  url.searchParams.set("offset", String(pageSize));
  return url.href;
}

/** Reads a txlist answer: `{status, message, result: [{hash, from, to, isError, txreceipt_status, blockNumber}]}`. */
export function readTxlist(body: unknown): ExplorerTx[] | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { result, message } = body as { result?: unknown; message?: unknown };
  // Etherscan answers "No transactions found" with status "0" and an empty result.
  if (Array.isArray(result) && result.length === 0) return [];
  if (!Array.isArray(result)) return message === "No transactions found" ? [] : undefined;
  const txs: ExplorerTx[] = [];
  for (const item of result) {
    if (typeof item !== "object" || item === null) continue;
    const t = item as Record<string, unknown>;
    if (typeof t.hash !== "string" || typeof t.from !== "string" || typeof t.to !== "string") continue;
    const blockNumber = Number(t.blockNumber);
    txs.push({
      hash: t.hash,
      from: t.from,
      to: t.to,
      failed: t.isError === "1" || t.txreceipt_status === "0",
      blockNumber: Number.isSafeInteger(blockNumber) ? blockNumber : 0,
    });
  }
  return txs;
}

/** Builds the explorer reader. */
export function createExplorerTxList(options: ExplorerTxListOptions): ExplorerTxList {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const pageSize = options.pageSize ?? 100;
  const fetchFn = options.fetch ?? fetch;

  // Read up to the cap and no further: trusted as configured is not trusted to answer a bounded body (it read the
  // whole body first, then compared its length in characters with the cap).
  async function operatorJson(url: string): Promise<unknown | undefined> {
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      const response = await fetchFn(url, { headers: { accept: "application/json" }, redirect: "error", signal });
      if (!response.ok) {
        await response.body?.cancel();
        return undefined;
      }
      const body = await readCapped(response, maxBytes, signal);
      if (typeof body === "string") return undefined;
      return JSON.parse(new TextDecoder().decode(body));
    } catch {
      return undefined;
    }
  }

  return {
    async txlist(apiUrl, address, source) {
      let url: string;
      try {
        url = txlistUrl(apiUrl, address, pageSize);
      } catch {
        return { ok: false, reason: "invalid" };
      }
      let body: unknown;
      if (source === "operator") {
        body = await operatorJson(url);
        if (body === undefined) return { ok: false, reason: "unavailable" };
      } else {
        const fetched = await options.pinned(url);
        if (fetched.status !== "ok") {
          return { ok: false, reason: fetched.status === "unavailable" && (fetched.reason === "blocked-address" || fetched.reason === "invalid-host") ? "blocked" : "unavailable" };
        }
        body = fetched.document;
      }
      const txs = readTxlist(body);
      return txs === undefined ? { ok: false, reason: "invalid" } : { ok: true, value: txs };
    },
  };
}
