// Smoke test of the compiled executable, as an operator runs it: copied alone into an empty directory (no
// node_modules, a decoy .env and bunfig.toml it must ignore), started on a free port with a fresh DATA_DIR, one
// delegated attestation through the client helper, the console page and its script (embedded, with the policy),
// SIGTERM, exit code 0; then a second start that reuses the extracted Anvil and the deployment. Usage: bun scripts/smoke_binary.ts dist/ats
//
// `bun scripts/smoke_binary.ts --image ats:0.1.0` runs the same test against the container image (decisions §28):
// podman (or docker; ATS_CONTAINER_ENGINE chooses) runs it as its own user with a read-only root filesystem, all
// capabilities dropped and no privilege escalation, /data a host folder (the decoys in it, the working directory),
// the port published on loopback; `podman stop` sends SIGTERM to the binary as PID 1 and the container's exit code
// must be 0; the second start is a new container on the same /data.
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { attestDelegated, fetchNonce } from "../client/delegated_attest.ts";

const START_TIMEOUT_MS = 90_000;
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 20_000;

type Running = { proc: Bun.Subprocess<"ignore", "pipe", "pipe">; url: string; output: () => string; container?: string };

/** How to run the thing under test: the binary itself, or a container of the image. */
type Target =
  | { kind: "binary"; binary: string }
  | { kind: "image"; image: string; engine: string; hostPort: number; name: string };

let current: Bun.Subprocess | undefined;
/** The container under test (image runs): removed on any failure, since killing its `run` client leaves it running. */
let currentContainer: { engine: string; name: string } | undefined;
let failed = false;

function step(message: string): void {
  console.log(`smoke: ${message}`);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

let runs = 0;

/** The command line that runs the target: the binary, or `<engine> run` of the image with /data at `dataDir`. */
function command(target: Target, dataDir: string, env: Record<string, string>): { argv: string[]; container?: string } {
  if (target.kind === "binary") return { argv: [target.binary] };
  const container = `${target.name}-${++runs}`;
  const argv = [target.engine, "run", "--rm", "--name", container, "--read-only", "--cap-drop=ALL",
    "--security-opt=no-new-privileges", "-p", `127.0.0.1:${target.hostPort}:8080`, "-v", `${dataDir}:/data`];
  // The image sets HOST, PORT and DATA_DIR itself.
  for (const [name, value] of Object.entries(env)) if (!["HOST", "PORT", "DATA_DIR"].includes(name)) argv.push("-e", `${name}=${value}`);
  return { argv: [...argv, target.image], container };
}

/** Starts the target with only the environment given (nothing inherited but PATH) and waits for its address. */
async function start(target: Target, cwd: string, env: Record<string, string>): Promise<Running> {
  const { argv, container } = command(target, env.DATA_DIR!, env);
  if (target.kind === "image") currentContainer = { engine: target.engine, name: container! };
  const proc = Bun.spawn(argv, {
    cwd,
    env: target.kind === "binary" ? { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env } : process.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  current = proc;
  let stdout = "";
  let stderr = "";
  const output = () => `--- stdout ---\n${stdout}\n--- stderr (last 4000 chars) ---\n${stderr.slice(-4000)}`;
  void pump(proc.stderr, (text) => {
    stderr += text;
  });
  const listening = new Promise<string>((resolve, reject) => {
    // Both pipes are drained for the binary's whole life, so it never blocks on a full pipe.
    void pump(proc.stdout, (text) => {
      stdout += text;
      const match = /ats listening on (\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    }).then(async () => reject(new Error(`the binary exited with code ${await proc.exited} before listening`)));
  });
  try {
    const announced = await withTimeout(listening, START_TIMEOUT_MS, "waiting for 'ats listening on'");
    // In a container the service announces its own address (0.0.0.0:8080); the test reaches the published port.
    const url = target.kind === "image" ? `http://127.0.0.1:${target.hostPort}` : announced;
    return { proc, url, output, container };
  } catch (error) {
    proc.kill("SIGKILL");
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${output()}`);
  }
}

async function pump(stream: ReadableStream<Uint8Array>, onText: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onText(decoder.decode(value, { stream: true }));
    }
  } catch {
    // the pipe closes when the binary ends
  }
}

async function waitReady(running: Running): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (running.proc.exitCode !== null) break;
    try {
      const response = await fetch(`${running.url}/readyz`, { signal: AbortSignal.timeout(5_000) });
      last = `${response.status} ${await response.text()}`;
      if (response.status === 200) return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await Bun.sleep(200);
  }
  throw new Error(`/readyz did not answer 200 (last: ${last})\n${running.output()}`);
}

async function stop(running: Running, target: Target): Promise<void> {
  if (target.kind === "image") {
    // The orchestrator's way: SIGTERM to PID 1, SIGKILL only after the grace (the service's 20 s + 5 s).
    // The attached `run` ends with the container's exit code.
    const stopper = Bun.spawn([target.engine, "stop", "-t", "25", running.container!], { stdout: "ignore", stderr: "pipe" });
    await stopper.exited;
  } else {
    running.proc.kill("SIGTERM");
  }
  const code = await withTimeout(running.proc.exited, STOP_TIMEOUT_MS, "waiting for exit after SIGTERM").catch((error) => {
    running.proc.kill("SIGKILL");
    throw new Error(`${error.message}\n${running.output()}`);
  });
  if (code !== 0) throw new Error(`exit code ${code} after SIGTERM, expected 0\n${running.output()}`);
}

function anvilCopies(dataDir: string): { name: string; ino: number; mode: number }[] {
  const dir = join(dataDir, "devnet", "bin");
  return readdirSync(dir).map((name) => {
    const stat = statSync(join(dir, name));
    return { name, ino: stat.ino, mode: stat.mode & 0o777 };
  });
}

function assert(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** `/` and the script it names come from the executable itself (there is no source tree beside it), with the policy. */
async function checkConsole(url: string): Promise<void> {
  const page = await fetch(`${url}/`, { signal: AbortSignal.timeout(10_000) });
  const html = await page.text();
  const csp = page.headers.get("content-security-policy") ?? "";
  assert(page.status === 200 && (page.headers.get("content-type") ?? "").startsWith("text/html"), `GET / answered ${page.status} ${page.headers.get("content-type")}`);
  assert(csp.includes("default-src 'none'") && csp.includes("script-src 'self'") && !csp.includes("unsafe"), `GET / has no strict policy: ${csp}`);
  const script = /<script type="module" src="(\/console\/app\.js\?v=[0-9a-f]+)"><\/script>/.exec(html)?.[1];
  assert(script !== undefined, "GET / names no /console/app.js script");
  const js = await fetch(`${url}${script}`, { signal: AbortSignal.timeout(10_000) });
  const code = await js.text();
  assert(js.status === 200 && (js.headers.get("content-type") ?? "").startsWith("text/javascript") && code.includes("eip6963:announceProvider"),
    `GET ${script} answered ${js.status} with ${code.length} characters`);
  assert((js.headers.get("content-security-policy") ?? "") === csp, "the script is served without the policy");
}

/** The review widget (decisions §29) and its script come from the executable too, framable by any page. */
async function checkWidget(url: string): Promise<void> {
  const page = await fetch(`${url}/widgets/reviews/embed?url=example.com&contract=0x${"1".repeat(40)}&chainId=1`, { signal: AbortSignal.timeout(10_000) });
  const html = await page.text();
  const csp = page.headers.get("content-security-policy") ?? "";
  assert(page.status === 200 && csp.includes("frame-ancestors *") && csp.includes("script-src 'self'"), `GET /widgets/reviews/embed answered ${page.status} with policy ${csp}`);
  const script = /<script type="module" src="(\/widgets\/reviews\/widget\.js\?v=[0-9a-f]+)"><\/script>/.exec(html)?.[1];
  assert(script !== undefined, "the widget page names no /widgets/reviews/widget.js script");
  const js = await fetch(`${url}${script}`, { signal: AbortSignal.timeout(10_000) });
  const code = await js.text();
  assert(js.status === 200 && code.includes("omatrust:signTypedData"), `GET ${script} answered ${js.status} with ${code.length} characters`);
}

/** A TCP port free on loopback right now, for the container's published port. */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

function containerEngine(): string {
  const chosen = process.env.ATS_CONTAINER_ENGINE?.trim();
  if (chosen) return chosen;
  return Bun.which("podman") !== null ? "podman" : "docker";
}

async function main(): Promise<void> {
  const [first_, second_] = process.argv.slice(2);
  const imageName = first_ === "--image" ? second_ : undefined;
  const built = first_ === "--image" ? undefined : first_;
  if (built === undefined && imageName === undefined) {
    throw new Error("usage: bun scripts/smoke_binary.ts <path to the compiled binary> | --image <image>");
  }
  const work = mkdtempSync(join(tmpdir(), "ats-smoke-"));
  try {
    const dataDir = join(work, "data");
    let target: Target;
    let cwd = work;
    if (imageName !== undefined) {
      // /data is a host folder owned by the image's user (65532), the container's working directory.
      mkdirSync(dataDir);
      chownSync(dataDir, 65532, 65532);
      cwd = dataDir;
      target = { kind: "image", image: imageName, engine: containerEngine(), hostPort: freePort(), name: `ats-smoke-${process.pid}` };
    } else {
      const binary = join(work, "ats");
      copyFileSync(resolve(built!), binary);
      chmodSync(binary, 0o755);
      target = { kind: "binary", binary };
    }
    // Decoys: the binary must take its configuration from the environment only (in the image: in its working directory).
    writeFileSync(join(cwd, ".env"), "NEXT_PUBLIC_ACTIVE_CHAIN=not-a-chain\nPORT=not-a-port\n");
    writeFileSync(join(cwd, "bunfig.toml"), 'preload = ["./missing-preload.ts"]\n');
    const env = { PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "warn" };

    step(target.kind === "binary"
      ? `starting ${target.binary} (size ${(statSync(target.binary).size / 1024 / 1024).toFixed(1)} MiB) in an empty directory`
      : `starting the image ${target.image} with ${target.engine} (read-only root, /data at ${dataDir}, port ${target.hostPort})`);
    const first = await start(target, cwd, env);
    step(`listening on ${first.url}; waiting for /readyz`);
    await waitReady(first);

    const user = privateKeyToAccount(ANVIL_DEV_KEYS[3]!);
    const result = await attestDelegated(
      {
        schemaName: "user-review",
        data: { subject: "did:web:smoke.example", version: "1", ratingValue: 5, reviewBody: "binary smoke test", screenshotUrls: [], proofs: [] },
        attester: user.address,
        sign: (typedData) => user.signTypedData(typedData),
      },
      { baseUrl: first.url },
    );
    assert(result.success === true && /^0x[0-9a-f]{64}$/i.test(result.txHash), `unexpected attest result ${JSON.stringify(result)}`);
    assert(result.uid !== null && /^0x[0-9a-f]{64}$/i.test(result.uid), `attestation has no UID: ${JSON.stringify(result)}`);
    const nonce = await fetchNonce(user.address, { baseUrl: first.url });
    assert(nonce.nonce === "1", `attester nonce is ${nonce.nonce} after one attestation, expected 1`);
    step("the MCP endpoint (the SDK bundled into the binary) with the official client");
    const mcp = new Client({ name: "smoke", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${first.url}/mcp`)));
    const { tools } = await mcp.listTools();
    // The eight tools of decisions §20 and controller_authorization (§25).
    assert(tools.length === 9 && tools.some((t) => t.name === "controller_authorization"), `MCP lists ${tools.map((t) => t.name).join(", ")}, expected 9 tools with controller_authorization`);
    const anchors = await mcp.callTool({ name: "get_trust_anchors", arguments: {} }) as { isError?: boolean; structuredContent?: { version?: unknown } };
    assert(anchors.isError !== true && typeof anchors.structuredContent?.version === "number", `get_trust_anchors answered ${JSON.stringify(anchors)}`);
    await mcp.close();
    step(`delegated attestation ${result.uid} in block ${result.blockNumber}`);
    await checkConsole(first.url);
    step("the console page and its script are served, embedded, under the Content-Security-Policy");
    await checkWidget(first.url);
    step("the review widget and its script are served, embedded, framable by any page");
    const extracted = anvilCopies(dataDir);
    assert(extracted.length === 1 && extracted[0]!.mode === 0o755, `expected one extracted anvil with mode 0755: ${JSON.stringify(extracted)}`);
    await stop(first, target);
    step("stopped with exit code 0 after SIGTERM");

    const second = await start(target, cwd, env);
    await waitReady(second);
    const again = await fetchNonce(user.address, { baseUrl: second.url });
    assert(again.easAddress === nonce.easAddress && again.nonce === "1", `second start lost the chain: ${JSON.stringify(again)}`);
    const reused = anvilCopies(dataDir);
    assert(JSON.stringify(reused) === JSON.stringify(extracted), `second start did not reuse the extracted anvil: ${JSON.stringify(reused)}`);
    await stop(second, target);
    step("second start reused the extracted anvil and the deployment; stopped with exit code 0");
  } finally {
    if (current !== undefined && current.exitCode === null && current.signalCode === null) current.kill("SIGKILL");
    if (currentContainer !== undefined) Bun.spawnSync([currentContainer.engine, "rm", "-f", currentContainer.name], { stdout: "ignore", stderr: "ignore" });
    rmSync(work, { recursive: true, force: true });
  }
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    current?.kill("SIGKILL");
    if (currentContainer !== undefined) Bun.spawnSync([currentContainer.engine, "rm", "-f", currentContainer.name], { stdout: "ignore", stderr: "ignore" });
    console.error(`smoke: interrupted by ${signal}`);
    process.exit(1);
  });
}

try {
  await main();
  step("ok");
} catch (error) {
  failed = true;
  console.error(`smoke: FAILED: ${error instanceof Error ? error.message : String(error)}`);
}
process.exit(failed ? 1 : 0);
