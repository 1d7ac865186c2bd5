/**
 * `ats healthcheck`: the container image's HEALTHCHECK (decisions §28). Asks the service in the same container
 * whether it is ready (`GET /readyz` on loopback, the port from `PORT`, default 8080) and answers with an exit
 * code: 0 ready, 1 anything else (not listening, 503, no answer within the timeout). It reads nothing else of the
 * configuration, so a setting the service itself refuses cannot make the check fail differently. The loopback check goes
 * straight to the port: `fetch` sent it through `HTTP_PROXY` when the operator had set one for the service's outbound
 * calls, and a ready instance was then marked unhealthy.
 */
import { request as httpRequest } from "node:http";

/** What the check needs: the environment's `PORT`, an optional URL, `fetch` and where to say why it failed. */
export type HealthcheckOptions = {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `ats healthcheck <url>`: another URL to ask (an http(s) URL); default the local `/readyz`. */
  readonly url?: string | undefined;
  readonly fetchFn?: typeof fetch;
  readonly timeoutMs?: number;
  readonly report?: (line: string) => void;
};

/** The URL the check asks: the argument, or `/readyz` on loopback at `PORT` (8080 when unset or 0). */
export function healthcheckUrl(env: HealthcheckOptions["env"], url?: string): string | undefined {
  if (url !== undefined) return /^https?:\/\/\S+$/.test(url) ? url : undefined;
  const raw = env.PORT?.trim();
  if (raw === undefined || raw === "" || raw === "0") return "http://127.0.0.1:8080/readyz";
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 65_535) return undefined;
  return `http://127.0.0.1:${Number(raw)}/readyz`;
}

/** Runs the check once; resolves to the process's exit code (0 ready, 1 not). */
export async function runHealthcheck(options: HealthcheckOptions): Promise<0 | 1> {
  const report = options.report ?? ((line: string) => console.error(line));
  const url = healthcheckUrl(options.env, options.url);
  if (url === undefined) {
    report(options.url !== undefined ? "healthcheck: expected an http(s) URL" : "healthcheck: PORT is not a port number");
    return 1;
  }
  try {
    const timeoutMs = options.timeoutMs ?? 4_000;
    const status = options.fetchFn === undefined && options.url === undefined
      ? await directStatus(url, timeoutMs)
      : await (options.fetchFn ?? fetch)(url, { signal: AbortSignal.timeout(timeoutMs), headers: { "user-agent": "ats-healthcheck" } })
        .then(async (response) => (await response.arrayBuffer(), response.status));
    if (status >= 200 && status < 300) return 0;
    report(`healthcheck: ${url} answered ${status}`);
    return 1;
  } catch (error) {
    report(`healthcheck: ${url} did not answer (${error instanceof Error ? error.name : "error"})`);
    return 1;
  }
}

/** `GET url` on loopback with node:http, which never goes through a proxy; the answer's status. */
function directStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers: { "user-agent": "ats-healthcheck" }, timeout: timeoutMs }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", reject);
    });
    request.on("timeout", () => request.destroy(Object.assign(new Error("timed out"), { name: "TimeoutError" })));
    request.on("error", reject);
    request.end();
  });
}
