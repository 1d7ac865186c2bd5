/** The answer models of the signing-key and key-status routes (decisions §17); their request models are in http/models.ts. */
import { Type as t } from "@sinclair/typebox";
import { AsOfModel } from "../../models.ts";
import { ChainAnswerModel } from "../../model_fields.ts";

const Seconds = (description: string) => t.Integer({ minimum: 0, description });

const Status = t.Union([t.Literal("registered"), t.Literal("active"), t.Literal("revoked"), t.Literal("expired")]);
const Trust = t.Union([t.Literal("none"), t.Literal("basic"), t.Literal("intermediate"), t.Literal("advanced")]);

const SigningKeyFields = {
  id: t.String({ description: "A UUID" }),
  accountId: t.String(),
  keyDid: t.String(),
  keyType: t.Union([t.Literal("attestation"), t.Literal("service-signing")]),
  displayName: t.String(),
  tags: t.Array(t.String()),
  notes: t.Union([t.String(), t.Null()]),
};

/** The answer of an upsert (the reference's shape). */
export const SigningKeyUpsertModel = t.Object({
  ...SigningKeyFields,
  created: t.Boolean({ description: "true: a new key; false: an existing key updated (id, createdAt and keyType kept)" }),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
});

/** The account's keys, each with its verdict for every subject of the account. */
export const SigningKeyListModel = t.Object({
  keys: t.Array(t.Object({
    ...SigningKeyFields,
    createdAt: t.String({ format: "date-time" }),
    updatedAt: t.String({ format: "date-time" }),
    subjects: t.Union([
      t.Array(t.Object({ subjectDid: t.String(), status: Status, trustLevel: Trust })),
      t.Null(),
    ], { description: "The key's status and trust level for each subject of the account, now; null when the chain or an endpoint could not be read (see subjectsError): never a guess" }),
    subjectsError: t.Optional(t.Object({ code: t.String(), error: t.String() })),
  }), { description: "Newest first" }),
});

/** The public key-status record. */
export const KeyStatusModel = t.Object({
  asOf: AsOfModel,
  chain: ChainAnswerModel,
  subjectDid: t.String({ description: "As normalized" }),
  keyDid: t.String({ description: "As normalized" }),
  at: Seconds("The time the chain's records were judged at"),
  status: Status,
  trustLevel: Trust,
  endpointEvidence: t.Object({
    found: t.Boolean({ description: "The subject's DNS TXT or did.json names the key now" }),
    sources: t.Array(t.String(), { description: "dns-txt, did-json" }),
    checkedAt: Seconds("When the endpoints were read: always now, whatever at is"),
  }),
  controllerWitness: t.Union([
    t.Object({ uid: t.String(), attester: t.String(), observedAt: Seconds("The witness's observedAt") }),
    t.Null(),
  ], { description: "The earliest witness of the key for the subject, by an approved controller-witness issuer, standing at at" }),
  keyBinding: t.Union([
    t.Object({
      uid: t.String(),
      attester: t.String(),
      keyPurpose: t.Array(t.String()),
      effectiveAt: Seconds("0: from when it was written"),
      expiresAt: Seconds("The earlier of the payload's expiresAt and the EAS expirationTime; 0: none"),
      revocationTime: Seconds("0: not revoked"),
    }),
    t.Null(),
  ], { description: "The binding the status comes from (an active one, else the newest), written by a controller of the subject by at" }),
});

