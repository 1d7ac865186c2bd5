/**
 * Controller authorization and DID URLs (decisions §25), browser-ready: ask the service the question the reference
 * SDK's `getControllerAuthorization` answers by scanning the chain ("is this did:pkh or did:jwk an authorized
 * controller of this subject for these key purposes at `at`"), once, from its index; and resolve a DID URL (a mutable
 * key reference such as `did:web:api.example.com#key-1`) to the durable did:jwk it names now. A non-2xx answer throws
 * an {@link AtsClientError} with the service's `code` (`INVALID_DID`, `INVALID_INPUT`, `NETWORK_ERROR`, …).
 */
import type { ControllerAuthorizationRecord, DidUrlResolution, KeyPurpose } from "../domain/controller_authorization/mod.ts";
import type { AsOf } from "../domain/index/mod.ts";
import { type ChainNamed, type ChainOption, withChain } from "./chain.ts";
import { DEFAULT_BASE_URL, requestJson } from "./http.ts";
import { requireSubject } from "./subject.ts";

export type { ControllerAuthorizationRecord, DidUrlResolution, KeyPurpose, KeyPurposeStatus } from "../domain/controller_authorization/mod.ts";

/** The service's answer: the record and the index head it was computed at. */
export type ControllerAuthorizationAnswer = ControllerAuthorizationRecord & { readonly asOf: AsOf } & ChainNamed;

/** Where the service is, and the chain to read on (decisions §30; default the service's default chain). */
export type ControllerAuthorizationOptions = ChainOption & {
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
};

/**
 * The controller authorization of `controllerDid` (a did:pkh or did:jwk) for `subjectDid` (a bare DID), for `purpose`
 * (default authentication and assertionMethod), at `at` (Unix seconds; default now). No session needed.
 */
export async function fetchControllerAuthorization(
  input: {
    readonly subjectDid: string;
    readonly controllerDid: string;
    readonly purpose?: readonly KeyPurpose[] | undefined;
    readonly at?: number | undefined;
  },
  options: ControllerAuthorizationOptions = {},
): Promise<ControllerAuthorizationAnswer> {
  requireSubject(input.subjectDid, "subjectDid");
  const params = new URLSearchParams({ subjectDid: input.subjectDid, controllerDid: input.controllerDid });
  if (input.purpose !== undefined) params.set("purpose", input.purpose.join(","));
  if (input.at !== undefined) params.set("at", String(Math.floor(input.at)));
  withChain(params, options.chain);
  const { body } = await requestJson<ControllerAuthorizationAnswer>(`/v1/controller-authorization?${params}`, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "GET",
  });
  return body;
}

/** The durable controller a DID URL names now (`GET /v1/did-url/resolve`). */
export async function resolveDidUrl(didUrl: string, options: ControllerAuthorizationOptions = {}): Promise<DidUrlResolution & ChainNamed> {
  const params = withChain(new URLSearchParams({ didUrl }), options.chain);
  const { body } = await requestJson<DidUrlResolution & ChainNamed>(`/v1/did-url/resolve?${params}`, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "GET",
  });
  return body;
}
