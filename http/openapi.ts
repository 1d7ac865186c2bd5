import { type CachePolicy, describeCacheControl, ERROR_SECONDS, isRevalidated } from "./http_cache.ts";
import { type RouteAuth, type RouteDoc, SubmissionAcceptedModel } from "./models.ts";
import { SESSION_COOKIE } from "./routes/session.ts";

/**
 * The ways a caller proves who it is or pays, by name. The bearer tokens of registered software (OAuth 2,
 * decisions §19) are listed as `{ bearer: [scope] }` beside `session` on the routes that take them (RouteDoc.scope).
 */
export const SECURITY_SCHEMES = {
  session: {
    type: "apiKey",
    in: "cookie",
    name: SESSION_COOKIE,
    description:
      "The HttpOnly session cookie that POST /v1/session/wallet/verify (or register) sets. From a browser, a request that changes state also needs an allowlisted Origin and a JSON body",
  },
  x402: {
    type: "apiKey",
    in: "header",
    name: "PAYMENT-SIGNATURE",
    description:
      "An x402 v2 payment (base64 JSON) for the terms of the PAYMENT-REQUIRED header (of the 401 without credentials, or the paid aliases' 402); taken only where a price is configured (X402_WITNESS_PRICE, X402_RELAY_PRICE, X402_PAID_PLAN_PRICE). The answer carries PAYMENT-RESPONSE",
  },
  bearer: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "An OAuth 2 access token of the service (RFC 9068, ES256; /.well-known/oauth-authorization-server): acts as its account within its scopes. Without one the 401 names the protected-resource metadata in WWW-Authenticate; a missing scope is 403 insufficient_scope",
  },
} as const;

type SecurityRequirement = Readonly<Partial<Record<keyof typeof SECURITY_SCHEMES, readonly string[]>>>;

/** The OpenAPI `security` of each kind of route: alternatives, each naming the schemes it needs together. */
const REQUIREMENTS: Readonly<Record<RouteAuth, readonly SecurityRequirement[]>> = {
  public: [],
  session: [{ session: [] }],
  "session-or-x402": [{ session: [] }, { x402: [] }],
  "session-and-x402": [{ session: [], x402: [] }],
  // `{}`: the operation answers without the cookie too.
  "session-optional": [{}, { session: [] }],
  x402: [{ x402: [] }],
};

const HTTP_METHODS: ReadonlySet<string> = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

const capitalized = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/**
 * A readable operationId, one per method and path: segments joined by `_`, each segment's `-` and `.` written
 * as camelCase and a `{name}` as `byName`, so `/v1/identity-resolve` and `/v1/identity/resolve` stay apart.
 */
export function operationIdOf(method: string, path: string): string {
  const segments = path.split("/").filter((s) => s !== "").map((segment) => {
    const parameter = /^\{(\w+)\}$/.exec(segment);
    if (parameter) return `by${capitalized(parameter[1]!)}`;
    const [first = "", ...rest] = segment.split(/[^A-Za-z0-9]+/).filter((w) => w !== "");
    return first + rest.map(capitalized).join("");
  });
  return `${method}_${segments.length === 0 ? "root" : segments.join("_")}`;
}

/** The `{name}`s of a path template, in order. */
function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}

/** The conditional request of a revalidated read (decisions §21). */
const IF_NONE_MATCH = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "ETags of answers the client holds (weak comparison: W/ is ignored); when one is the current answer's, 304 with no body",
  schema: { type: "string" },
} as const;

const STRING = { type: "string" } as const;

/** The idempotency key of a write (decisions §23). */
const IDEMPOTENCY_KEY = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "1–255 printable ASCII characters (a UUID), bare or as a quoted string; kept 24 h per account (per client address where there is none). A retry with the same key and the same request (method, path and body, by SHA-256) gets the first answer with Idempotent-Replayed: true and writes nothing",
  schema: { type: "string", minLength: 1, maxLength: 257 },
} as const;

/** A relay's preference for an answer before its transaction is mined (RFC 7240, decisions §23). */
const PREFER = {
  name: "Prefer",
  in: "header",
  required: false,
  description:
    "respond-async: once the request's checks passed and its submission is recorded, 202 {submissionId, state} with Location: /v1/submissions/{id}; poll there for the outcome. A request its checks refuse gets the same answer as without it",
  schema: { type: "string" },
} as const;

/** What a write that takes an idempotency key may answer besides its own statuses. */
const IDEMPOTENCY_REFUSALS: Readonly<Record<number, string>> = {
  400: "INVALID_INPUT: an Idempotency-Key that is empty, longer than 255 characters or not printable ASCII",
  409: "IDEMPOTENCY_KEY_IN_USE: the first request with this Idempotency-Key is still running; Retry-After header",
  422: "IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used for a different request",
};

/** The statuses of a route, with an idempotent write's refusals merged in (decisions §23). */
function statusesOf(doc: RouteDoc): Array<readonly [number, RouteDoc["responses"][number]]> {
  const responses: Record<number, RouteDoc["responses"][number]> = { ...doc.responses };
  if (doc.respondAsync) {
    responses[202] = { description: "Accepted (Prefer: respond-async): the submission is recorded and on its way; Location: /v1/submissions/{id}, Preference-Applied: respond-async", schema: SubmissionAcceptedModel };
  }
  if (doc.idempotent) {
    const errorSchema = (doc.responses[400] ?? doc.responses[409] ?? doc.responses[413])?.schema;
    for (const [status, description] of Object.entries(IDEMPOTENCY_REFUSALS)) {
      const held = responses[Number(status)];
      responses[Number(status)] = held === undefined ? { description, schema: errorSchema } : { ...held, description: `${held.description}; ${description}` };
    }
  }
  return Object.entries(responses).map(([status, r]) => [Number(status), r] as const);
}

/** The `Cache-Control` an answer of `status` carries under `policy` (http/http_cache.ts), in words. */
function cacheControlOf(policy: CachePolicy, method: string, status: number): string {
  if (policy.kind === "private" || policy.kind === "no-store") return describeCacheControl(policy);
  if (method !== "get") return "no-store";
  if (status === 200 || status === 304) return describeCacheControl(policy);
  if (policy.kind === "public" && (status === 400 || status === 404)) return `public, max-age=<s> (the 200's, at most ${ERROR_SECONDS})`;
  return "no-store";
}

/**
 * The documented answers of an operation, each with the `Cache-Control` it carries; a revalidated read's 200 with its
 * `ETag`, and its 304 (decisions §21).
 */
function responsesOf(doc: RouteDoc): Record<string, unknown> {
  const revalidated = doc.method === "get" && isRevalidated(doc.cache);
  const statuses = statusesOf(doc);
  const responses: Record<string, unknown> = {};
  for (const [status, r] of statuses) {
    const headers: Record<string, unknown> = { "Cache-Control": { description: cacheControlOf(doc.cache, doc.method, status), schema: STRING } };
    if (doc.idempotent && status !== 429) {
      headers["Idempotent-Replayed"] = { description: "true when this is the stored answer of an earlier request with the same Idempotency-Key", schema: STRING };
    }
    if (status === 202 && doc.respondAsync) headers.Location = { description: "/v1/submissions/{id}: where the outcome is polled", schema: STRING };
    if (revalidated && status === 200) {
      // An answer of the index carries asOf, which moves at every poll: its tag is weak, over the answer without it.
      const fromIndex = doc.cache.kind === "public" && doc.cache.freshness.includes("index");
      headers.ETag = fromIndex
        ? { description: "A weak entity tag W/\"…\" of the answer without asOf and its evaluation times (SHA-256, base64url): the same across polls while the answer is (decisions §21)", schema: STRING }
        : { description: "A strong entity tag of the answer's bytes (SHA-256, base64url)", schema: STRING };
    }
    responses[status] = r.mediaType !== undefined
      ? { description: r.description, headers, content: { [r.mediaType]: { schema: { type: "string" } } } }
      : r.schema
      ? { description: r.description, headers, content: { "application/json": { schema: r.schema } } }
      : { description: r.description, headers };
  }
  if (revalidated) {
    responses[304] = {
      description: "Not Modified: If-None-Match names the current answer's ETag; no body, the same ETag and Cache-Control",
      headers: {
        "Cache-Control": { description: cacheControlOf(doc.cache, doc.method, 304), schema: STRING },
        ETag: { description: "The current answer's entity tag", schema: STRING },
      },
    };
  }
  return responses;
}

/** Builds an OpenAPI 3.1 document from the route docs; TypeBox models are JSON Schema as they are. */
export function buildOpenApi(docs: readonly RouteDoc[], info: { title: string; version: string; serverUrl: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  const operationIds = new Map<string, string>();
  for (const doc of docs) {
    for (const path of doc.paths) {
      const operationId = operationIdOf(doc.method, path);
      const taken = operationIds.get(operationId);
      // A programming error in the table (the same method and path twice, or two paths that read alike): loud.
      if (taken !== undefined) throw new Error(`operationId ${operationId} of ${doc.method} ${path} is also ${taken}'s`);
      operationIds.set(operationId, `${doc.method} ${path}`);
      const operation: Record<string, unknown> = {
        summary: doc.summary,
        operationId,
        security: doc.scope === undefined ? REQUIREMENTS[doc.auth] : [...REQUIREMENTS[doc.auth], { bearer: [doc.scope] }],
        responses: responsesOf(doc),
      };
      if (doc.method === "get" && isRevalidated(doc.cache)) operation.parameters = [IF_NONE_MATCH];
      if (doc.idempotent) operation.parameters = doc.respondAsync ? [IDEMPOTENCY_KEY, PREFER] : [IDEMPOTENCY_KEY];
      const query = (doc.request?.query ?? doc.query) as { properties?: Record<string, unknown>; required?: string[] } | undefined;
      if (query) {
        // The query model's own property schemas, by reference: what the route validates is what is published.
        const required = new Set(query.required ?? []);
        operation.parameters = [
          ...Object.entries(query.properties ?? {}).map(([name, schema]) => ({
            name,
            in: "query",
            required: required.has(name),
            schema,
          })),
          ...(operation.parameters as unknown[] | undefined ?? []),
        ];
        // At least one of these parameters (OpenAPI has no word for it; the route refuses none with 400 INVALID_INPUT).
        const anyOf = (query as { "x-required-any-of"?: readonly string[] })["x-required-any-of"];
        if (anyOf !== undefined) operation["x-required-any-of"] = anyOf;
      }
      if (doc.request?.body) {
        operation.requestBody = { required: true, content: { "application/json": { schema: doc.request.body } } };
      } else if (doc.body) {
        // A body the route checks in its own code (the domain's parser, the OAuth form reader, the MCP endpoint).
        operation.requestBody = { required: doc.body.required ?? true, content: { [doc.body.mediaType ?? "application/json"]: { schema: doc.body.schema } } };
      }
      const item = (paths[path] ??= {});
      const names = pathParameterNames(path);
      // Declared once on the path item, which its every method shares; an operation's own `parameters` stay its query model's.
      if (names.length > 0 && item.parameters === undefined) {
        item.parameters = names.map((name) => {
          const description = doc.pathParameters?.[name];
          return { name, in: "path", required: true, ...(description ? { description } : {}), schema: { type: "string", minLength: 1 } };
        });
      }
      item[doc.method] = operation;
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version },
    servers: [{ url: info.serverUrl }],
    paths,
    components: { securitySchemes: SECURITY_SCHEMES },
  };
}

const escape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A plain, dependency-free HTML page listing every operation of the OpenAPI document. */
/** The `/docs` page's one stylesheet, inline: its hash is all the page's Content-Security-Policy allows. */
export const API_PAGE_STYLE = "body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}";

export function renderApiPage(doc: ReturnType<typeof buildOpenApi>): string {
  const rows: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!HTTP_METHODS.has(method)) continue; // the path's own `parameters`
      const o = op as { summary: string; responses: Record<string, unknown>; requestBody?: { content: Record<string, unknown> }; parameters?: { name: string }[] };
      const params = o.parameters?.map((p) => p.name).join(", ") ?? "";
      const body = o.requestBody === undefined ? "" : "application/json" in o.requestBody.content ? " JSON body" : " form body";
      rows.push(
        `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td><td>${escape(o.summary)}</td>` +
          `<td>${escape(params)}${body}</td><td>${Object.keys(o.responses).join(", ")}</td></tr>`,
      );
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)} API</title>
<style>${API_PAGE_STYLE}</style>
</head><body><h1>${escape(doc.info.title)} API ${escape(doc.info.version)}</h1>
<p>Machine-readable description: <a href="/openapi.json">/openapi.json</a>. Every error body is <code>{"error","code","details"?}</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what it does</th><th>input</th><th>statuses</th></tr></thead><tbody>
${rows.join("\n")}
</tbody></table></body></html>`;
}
