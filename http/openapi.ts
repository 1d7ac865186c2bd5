import type { RouteDoc } from "./models.ts";

/** Builds an OpenAPI 3.1 document from the route docs; TypeBox models are JSON Schema as they are. */
export function buildOpenApi(docs: readonly RouteDoc[], info: { title: string; version: string; serverUrl: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const doc of docs) {
    for (const path of doc.paths) {
      const operation: Record<string, unknown> = {
        summary: doc.summary,
        operationId: `${doc.method}${path.replace(/[^A-Za-z0-9]+/g, "_")}`,
        responses: Object.fromEntries(
          Object.entries(doc.responses).map(([status, r]) => [
            status,
            r.schema ? { description: r.description, content: { "application/json": { schema: r.schema } } } : { description: r.description },
          ]),
        ),
      };
      const query = doc.request?.query as { properties?: Record<string, unknown>; required?: string[] } | undefined;
      if (query) {
        // The query model's own property schemas, by reference: what the route validates is what is published.
        const required = new Set(query.required ?? []);
        operation.parameters = Object.entries(query.properties ?? {}).map(([name, schema]) => ({
          name,
          in: "query",
          required: required.has(name),
          schema,
        }));
      }
      if (doc.request?.body) {
        operation.requestBody = { required: true, content: { "application/json": { schema: doc.request.body } } };
      }
      (paths[path] ??= {})[doc.method] = operation;
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version },
    servers: [{ url: info.serverUrl }],
    paths,
  };
}

const escape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A plain, dependency-free HTML page listing every operation of the OpenAPI document. */
export function renderApiPage(doc: ReturnType<typeof buildOpenApi>): string {
  const rows: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const o = op as { summary: string; responses: Record<string, unknown>; requestBody?: unknown; parameters?: { name: string }[] };
      const params = o.parameters?.map((p) => p.name).join(", ") ?? "";
      rows.push(
        `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td><td>${escape(o.summary)}</td>` +
          `<td>${escape(params)}${o.requestBody ? " JSON body" : ""}</td><td>${Object.keys(o.responses).join(", ")}</td></tr>`,
      );
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)} API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}</style>
</head><body><h1>${escape(doc.info.title)} API ${escape(doc.info.version)}</h1>
<p>Machine-readable description: <a href="/openapi.json">/openapi.json</a>. Every error body is <code>{"error","code","details"?}</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what it does</th><th>input</th><th>statuses</th></tr></thead><tbody>
${rows.join("\n")}
</tbody></table></body></html>`;
}
