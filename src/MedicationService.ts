/**
 * A person's medications: `POST {baseUrl}/api/clinical/medication/get`, a typed view of
 * `PersonData.medications` (same requests, errors, retries, spans and metrics).
 *
 * The service does not publish the medication fields, so `get` keeps every item whole, exactly as
 * the server sent it; `getAs` decodes the items with a Schema of the caller's own.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Core from "../core/call/personData.js"
import type { ClinicalConfig } from "./ClinicalConfig.js"
import type { ClinicalError, InvalidRequest } from "./ClinicalError.js"
import type { HttpTransport } from "./HttpTransport.js"
import * as PersonData from "./PersonData.js"
import type { TokenService } from "./TokenService.js"

/** Path of the operation under `baseUrl`. */
export const path: string = PersonData.medications.path

/** One medication with every field the server sent (the fields are not published). */
export type Medication = PersonData.Item

/** Schema of {@link Medication}: any JSON object, kept whole. */
export const Medication: Schema.Schema<Medication> = PersonData.Item

/** Options of a request: the optional date range (the service filters by it; time parts are ignored). */
export type GetOptions = PersonData.GetOptions

/** A PersonUid, plain or `Redacted`. It identifies a patient: it is redacted from the moment it enters. */
export type PersonUid = PersonData.PersonUid

/** What a request returns. */
export type MedicationResult<A> = Core.MedicationResult<A>

/** The medication operation. */
export interface Service {
  /** The person's medications, each kept whole. */
  readonly get: (
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<MedicationResult<Medication>, ClinicalError>
  /** The person's medications, each decoded with `schema` (a failure is a `ResponseDecodeError`). */
  readonly getAs: <A, I>(
    schema: Schema.Schema<A, I, never>,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<MedicationResult<A>, ClinicalError>
  /** The medications of many persons, as `PersonData.getMany` (one entry per person, in completion order). */
  readonly getMany: <E = never, R = never>(
    personUids: PersonData.Persons<E, R>,
    options?: PersonData.ManyOptions
  ) => Stream.Stream<PersonData.Entry<MedicationResult<Medication>>, E | InvalidRequest, R>
}

/** The tag of the medication operation. */
export class MedicationService extends Context.Tag("effect-clinical/MedicationService")<MedicationService, Service>() {}

/** A {@link MedicationResult}: a class, not an object literal, as every object made per call (see `PersonData`). */
class Medications<A> implements MedicationResult<A> {
  constructor(readonly medications: ReadonlyArray<A>, readonly raw: unknown) {}
}

const asMedications = <A>({ items, raw }: PersonData.Result<A>): MedicationResult<A> => new Medications(items, raw)

/** Builds the medication operation over the services it needs. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.map(
  PersonData.make,
  (data) =>
    MedicationService.of({
      get: (personUid, options) => Effect.map(data.get(PersonData.medications, personUid, options), asMedications),
      getAs: (schema, personUid, options) =>
        Effect.map(data.getAs(PersonData.medications, schema, personUid, options), asMedications),
      getMany: (personUids, options) =>
        Stream.map(data.getMany(PersonData.medications, personUids, options), ({ index, outcome }) => ({
          index,
          outcome: outcome._tag === "Success" ? { _tag: "Success", result: asMedications(outcome.result) } : outcome
        }))
    })
)

/** The medication operation, over the services the application provides. */
export const layer: Layer.Layer<MedicationService, never, ClinicalConfig | HttpTransport | TokenService> = Layer
  .effect(MedicationService, make)

/** The person's medications, from the `MedicationService` in context. */
export const get = (
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<MedicationResult<Medication>, ClinicalError, MedicationService> =>
  Effect.flatMap(MedicationService, (service) => service.get(personUid, options))

/** The person's medications decoded with `schema`, from the `MedicationService` in context. */
export const getAs = <A, I>(
  schema: Schema.Schema<A, I, never>,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<MedicationResult<A>, ClinicalError, MedicationService> =>
  Effect.flatMap(MedicationService, (service) => service.getAs(schema, personUid, options))

/** The medications of many persons, from the `MedicationService` in context (see `Service.getMany`). */
export const getMany = <E = never, R = never>(
  personUids: PersonData.Persons<E, R>,
  options?: PersonData.ManyOptions
): Stream.Stream<PersonData.Entry<MedicationResult<Medication>>, E | InvalidRequest, R | MedicationService> =>
  Stream.unwrap(Effect.map(MedicationService, (service) => service.getMany(personUids, options)))
