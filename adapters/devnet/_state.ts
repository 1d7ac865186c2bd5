import { open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";

const gunzipAsync = promisify(gunzip);

const DUMP_TIMEOUT_MS = 30_000;

/** How to keep a devnet's state file. */
export type StateCheckpointerOptions = {
  rpcUrl: string;
  /** The file `anvil --load-state` reads at the next start. */
  stateFile: string;
  /** Milliseconds between checks for a new head block (saved only when it changed); 0 or absent: no periodic save. */
  intervalMs?: number | undefined;
  log: (line: string) => void;
  /** Default: the global fetch; tests wrap it to count or hold dumps. */
  fetchFn?: typeof fetch | undefined;
};

/** Saves Anvil's state on request and periodically. */
export type StateCheckpointer = {
  /**
   * Writes the chain's state as it is now (or later) to the state file. Calls made while a save runs share one
   * further save, so each caller's promise resolves after a save that began after its call.
   */
  checkpoint(): Promise<void>;
  /** Ends the periodic save; `checkpoint()` still works. */
  close(): void;
};

/**
 * Creates the state checkpointer of one Anvil. The service, not Anvil, owns the state file: Anvil's own dump
 * (`--state`, `--dump-state`) rewrites the file in place and would do so for as long as an orphaned Anvil lives.
 */
export function createStateCheckpointer(options: StateCheckpointerOptions): StateCheckpointer {
  const fetchFn = options.fetchFn ?? fetch;
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  let savedHead: string | undefined;

  const save = async (): Promise<void> => {
    // Anvil reads its accounts and its blocks for a dump one after the other, so a block mined meanwhile can leave
    // a dump whose state holds a transaction its blocks lack (restored, the attestation is there but its receipt
    // and log are not). A dump is written only when no block came between the head read before it and after it.
    // Under a steady stream of blocks the last dump is written all the same after a few tries: a checkpoint must
    // cover the blocks mined before it was asked for (the caller records a submission as mined after it).
    for (let attempt = 1; ; attempt++) {
      const head = await latestBlockHash(options.rpcUrl, fetchFn);
      const json = await readAnvilDump(options.rpcUrl, { fetchFn });
      const quiet = (await latestBlockHash(options.rpcUrl, fetchFn)) === head;
      if (quiet || attempt === CONSISTENT_DUMP_ATTEMPTS) {
        if (!quiet) options.log(`state checkpoint: blocks kept coming during ${attempt} dumps; the last one is saved`);
        await writeFileAtomically(options.stateFile, json);
        savedHead = head;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 2 * attempt));
    }
  };

  const run = (): Promise<void> => {
    const current = save();
    running = current;
    current.then(ignore, ignore).then(() => {
      if (running === current) running = undefined;
    });
    return current;
  };

  const checkpoint = (): Promise<void> => {
    // A queued save has not begun yet, so it covers this caller too.
    if (queued !== undefined) return queued;
    if (running === undefined) return run();
    const next = running.then(ignore, ignore).then(() => {
      queued = undefined;
      return run();
    });
    queued = next;
    return next;
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  if (options.intervalMs !== undefined && options.intervalMs > 0) {
    let ticking = false;
    timer = setInterval(() => {
      if (ticking || running !== undefined) return;
      ticking = true;
      void (async () => {
        try {
          if ((await latestBlockHash(options.rpcUrl, fetchFn)) !== savedHead && !closed) await checkpoint();
        } catch (error) {
          if (!closed) options.log(`periodic state checkpoint failed: ${error instanceof Error ? error.message : String(error)}`);
        } finally {
          ticking = false;
        }
      })();
    }, options.intervalMs);
    timer.unref?.();
  }

  return {
    checkpoint,
    close: () => {
      closed = true;
      clearInterval(timer);
    },
  };
}

/** Options of `dumpAnvilState`. */
export type DumpAnvilStateOptions = {
  fetchFn?: typeof fetch | undefined;
  timeoutMs?: number | undefined;
  /**
   * Refuse (throw) instead of writing a dump whose best block is below the file's: a salvage of a left-over Anvil
   * must never replace a newer checkpoint with an older chain (an Anvil answering while it shuts down, say).
   */
  neverOlder?: boolean | undefined;
};

/**
 * Asks Anvil for its state (`anvil_dumpState`: hex of gzipped JSON) and writes the JSON that `--load-state` reads
 * to `stateFile` atomically: `<file>.tmp`, fsync, rename, fsync of the directory. A crash at any point leaves
 * either the previous file or the new one, never a mix.
 */
export async function dumpAnvilState(rpcUrl: string, stateFile: string, options: DumpAnvilStateOptions = {}): Promise<void> {
  const json = await readAnvilDump(rpcUrl, options);
  if (options.neverOlder) {
    const saved = await bestBlockOfFile(stateFile);
    const dumped = bestBlock(new TextDecoder().decode(json));
    if (saved !== undefined && (dumped === undefined || dumped < saved)) {
      throw new Error(`the dump ends at block ${dumped ?? "?"}, before the saved state's ${saved}; the saved state is kept`);
    }
  }
  await writeFileAtomically(stateFile, json);
}

/** Anvil's state as the JSON `--load-state` reads (`anvil_dumpState` answers it gzipped, in hex). */
async function readAnvilDump(rpcUrl: string, options: DumpAnvilStateOptions): Promise<Uint8Array> {
  const hex = await anvilRpc(rpcUrl, "anvil_dumpState", [], options.fetchFn ?? fetch, options.timeoutMs ?? DUMP_TIMEOUT_MS);
  if (typeof hex !== "string" || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new Error("anvil_dumpState did not answer hex");
  const json = await gunzipAsync(Buffer.from(hex.slice(2), "hex"));
  if (!looksLikeJsonObject(json)) throw new Error("anvil_dumpState did not answer a gzipped JSON object");
  return json;
}

/** The best block number of a dump's JSON (`best_block_number`), undefined when it has none. */
function bestBlock(text: string): bigint | undefined {
  try {
    const value = (JSON.parse(text) as { best_block_number?: unknown }).best_block_number;
    return typeof value === "number" || (typeof value === "string" && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(value)) ? BigInt(value) : undefined;
  } catch {
    return undefined;
  }
}

async function bestBlockOfFile(path: string): Promise<bigint | undefined> {
  try {
    return bestBlock(await readFile(path, "utf8"));
  } catch {
    return undefined;
  }
}

/** Replaces `path` with `data` through `<path>.tmp`, syncing the data before the rename and the directory after. */
export async function writeFileAtomically(path: string, data: Uint8Array): Promise<void> {
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, "w", 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  try {
    const directory = await open(dirname(path), "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  } catch {
    // Not every file system syncs a directory; the rename itself is still atomic.
  }
}

function looksLikeJsonObject(bytes: Uint8Array): boolean {
  let end = bytes.length - 1;
  while (end >= 0 && (bytes[end] === 0x0a || bytes[end] === 0x0d || bytes[end] === 0x20 || bytes[end] === 0x09)) end--;
  return bytes[0] === 0x7b && end > 0 && bytes[end] === 0x7d;
}

async function latestBlockHash(rpcUrl: string, fetchFn: typeof fetch): Promise<string> {
  const block = await anvilRpc(rpcUrl, "eth_getBlockByNumber", ["latest", false], fetchFn, 5_000) as { hash?: unknown } | null;
  if (block === null || typeof block.hash !== "string") throw new Error("eth_getBlockByNumber did not answer a block");
  return block.hash;
}

/** One JSON-RPC call to Anvil; an error answer or a timeout throws. */
export async function anvilRpc(
  rpcUrl: string,
  method: string,
  params: unknown[],
  fetchFn: typeof fetch,
  timeoutMs: number,
): Promise<unknown> {
  const response = await fetchFn(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`${method} answered HTTP ${response.status}`);
  const json = (await response.json()) as { result?: unknown; error?: { message?: unknown } };
  if (json.error !== undefined) throw new Error(`${method} failed: ${String(json.error.message)}`);
  return json.result;
}

function ignore(): void {}

/** Dumps tried before a checkpoint gives up for this time (each retry follows a block mined during the dump). */
const CONSISTENT_DUMP_ATTEMPTS = 20;
