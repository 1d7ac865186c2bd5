/**
 * The events of decisions §22 and their payloads: what an outbox row (an attestation or a revocation that crossed
 * `WEBHOOK_CONFIRMATIONS`) becomes, which endpoints it goes to, and the one id each event keeps at every endpoint and
 * on every retry.
 */
import { keccak256, stringToBytes } from "viem/utils";
import type { StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import type { OutboxRow, WebhookEventType, WebhookMessage, WebhookTarget } from "../../ports/webhooks.ts";
import type { ChainAnswer } from "../chains/mod.ts";
import { base64UrlEncode, didToAddress, recordSubjectDid } from "../did/mod.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/** Every event type an endpoint may ask for. */
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [
  "attestation.created",
  "attestation.revoked",
  "key.status_changed",
  "submission.settled",
  "webhook.test",
];

/** The schemas whose attestations change a key's status (decisions §17, §22). */
const KEY_SCHEMAS = new Set(["key-binding", "controller-witness"]);

/** The id of an event derived from what it is about, so that the same change is one event wherever it is found. */
export function derivedEventId(type: WebhookEventType, about: string): string {
  return `msg_${base64UrlEncode(keccak256(stringToBytes(`${type}:${about}`), "bytes").slice(0, 18))}`;
}

/** A fresh random event id (a test event). */
export function randomEventId(random: Random): string {
  return `msg_${base64UrlEncode(random.bytes(16))}`;
}

/** A message: the body `{type, timestamp, data}` as sent. */
export function webhookMessage(id: string, type: WebhookEventType, nowMs: number, data: unknown): WebhookMessage {
  return { id, type, body: JSON.stringify({ type, timestamp: new Date(nowMs).toISOString(), data }), createdAtMs: nowMs };
}

/**
 * The `chain {chainId, caip2, easContract}` of an outbox row's events (decisions §30): the chain and EAS contract whose
 * index wrote the row; undefined for a row that names neither (its events then carry no `chain`).
 */
export function outboxChain(row: Pick<OutboxRow, "chainId" | "eas">): ChainAnswer | undefined {
  if (row.chainId === undefined || row.eas === undefined) return undefined;
  return { chainId: row.chainId, caip2: `eip155:${row.chainId}`, easContract: row.eas.toLowerCase() };
}

/** The attestation of an outbox row as a payload's `data` (decisions §22), with its subject and schema name. */
export type AttestationEvent = {
  readonly subject: string;
  readonly schemaName: string | null;
  readonly data: Readonly<Record<string, unknown>>;
};

/**
 * The `data` of an attestation event: undefined when the row no longer matches the index (a revocation rewound by a
 * deep reorg) or the attestation names no subject whose DID address it was sent to (it is about nobody one can watch).
 */
export function attestationEvent(row: OutboxRow, record: StoredAttestation, schemaNames: ReadonlyMap<string, string>): AttestationEvent | undefined {
  if (row.kind === "revoked" && record.revokedBlock !== row.blockNumber) return undefined;
  const schemaUid = record.schema.toLowerCase();
  const schemaName = schemaNames.get(schemaUid) ?? null;
  const definition = schemaName === null ? undefined : findSchemaByName(schemaName);
  const decoded = definition === undefined ? undefined : decodeSchemaData(definition.schema, record.data as HexString);
  const fields = decoded?.ok ? decoded.value : {};
  // A record's subject as the index reads it (recordSubjectDid: the fragment cut, then the one subject rule), so a
  // watcher hears of what the list and the count show under the subject: one no route can name (U+0000, whitespace,
  // control characters outside a fragment) is about nobody one can watch. One with U+0000, written by anyone to EAS,
  // stopped every account's deliveries on PostgreSQL (its text refuses it), the fan-out retrying that row for good.
  const subject = recordSubjectDid(fields.subject);
  if (subject === undefined) return undefined;
  const address = didToAddress(subject);
  if (!address.ok || address.value.toLowerCase() !== record.recipient.toLowerCase()) return undefined;
  const chain = outboxChain(row);
  return {
    subject,
    schemaName,
    data: {
      uid: record.uid.toLowerCase(),
      schema: schemaName,
      schemaUid,
      subject,
      attester: record.attester.toLowerCase(),
      recipient: record.recipient.toLowerCase(),
      refUID: record.refUID.toLowerCase(),
      txHash: row.txHash ?? null,
      blockNumber: Number(row.blockNumber),
      time: Number(record.time),
      revoked: row.kind === "revoked",
      fields,
      ...(chain === undefined ? {} : { chain }),
    },
  };
}

/** What one outbox row publishes: messages, and the endpoints each goes to. */
export type Publication = { readonly message: WebhookMessage; readonly endpointIds: readonly string[] };

/**
 * The events of one outbox row for the endpoints that may hear of its subject: `attestation.created`/`.revoked` to
 * those watching it (explicitly, or as their account's own subject while `ownSubjects`), and `key.status_changed`
 * for a key binding or controller witness to the endpoints of accounts that own the subject.
 */
export function publicationsOf(row: OutboxRow, event: AttestationEvent, targets: readonly WebhookTarget[], nowMs: number, defaultChainId?: number): Publication[] {
  const out: Publication[] = [];
  // Decisions §30: the same uid may exist on two chains (same EAS address, same attestation in the same second), so an
  // event of another chain than the default is told apart by its chain; the default chain's ids are as before.
  const about = row.chainId !== undefined && defaultChainId !== undefined && row.chainId !== defaultChainId
    ? `eip155:${row.chainId}:${String(event.data.uid)}`
    : String(event.data.uid);
  const type: WebhookEventType = row.kind === "attested" ? "attestation.created" : "attestation.revoked";
  const watching = targets.filter((t) => t.watched && t.events.includes(type)).map((t) => t.endpointId);
  if (watching.length > 0) out.push({ message: webhookMessage(derivedEventId(type, about), type, nowMs, event.data), endpointIds: watching });
  if (event.schemaName !== null && KEY_SCHEMAS.has(event.schemaName)) {
    const owners = targets.filter((t) => t.owned && t.events.includes("key.status_changed")).map((t) => t.endpointId);
    if (owners.length > 0) {
      const fields = event.data.fields as Record<string, unknown>;
      const data = {
        subject: event.subject,
        kind: event.schemaName,
        change: row.kind === "attested" ? "written" : "revoked",
        key: event.schemaName === "key-binding" ? fields.keyId ?? null : fields.controller ?? null,
        uid: event.data.uid,
        attester: event.data.attester,
        txHash: event.data.txHash,
        blockNumber: event.data.blockNumber,
        ...(event.data.chain === undefined ? {} : { chain: event.data.chain }),
      };
      const id = derivedEventId("key.status_changed", `${row.kind}:${about}`);
      out.push({ message: webhookMessage(id, "key.status_changed", nowMs, data), endpointIds: owners });
    }
  }
  return out;
}
