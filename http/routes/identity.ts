import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import { resolveIdentities } from "../../domain/identity.ts";
import { errorBody, json } from "../errors.ts";
import { IdentityResolveBody } from "../models.ts";

const PATHS = ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"] as const;

/** identity-resolve under its three paths: display labels only, never used for authorization. */
export function identityRoutes() {
  const handler = ({ body }: { body: unknown }) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof body === "string" ? body : "");
    } catch {
      return json(errorBody("INVALID_JSON", "Invalid JSON body"), 400);
    }
    if (!Value.Check(IdentityResolveBody, parsed)) {
      const identifiers = (parsed as { identifiers?: unknown } | null)?.identifiers;
      const message = Array.isArray(identifiers) && identifiers.length > 100
        ? "identifiers must contain at most 100 entries"
        : "identifiers must be an array of strings";
      return json(errorBody("INVALID_INPUT", message), 400);
    }
    return json({ identities: resolveIdentities(parsed.identifiers) });
  };
  const app = new Elysia({ name: "identity-routes" });
  for (const path of PATHS) app.post(path, handler, { parse: "text" });
  return app;
}
