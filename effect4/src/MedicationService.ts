/**
 * A person's medications: `PersonData`'s `medications` operation
 * (`POST {baseUrl}/api/clinical/medication/get`), its answer as `medications`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Core from "../../core/call/personData.js"
import type { ClinicalConfig } from "./ClinicalConfig.js"
import type { ClinicalError, InvalidRequest } from "./ClinicalError.js"
import type { HttpTransport } from "./HttpTransport.js"
import * as PersonData from "./PersonData.js"
import type { TokenService } from "./TokenService.js"

/** Where the medications are, under `baseUrl`. */
export const path: string = PersonData.medications.path

/** A medication with every field the server sent (the item fields are not published). */
export type Medication = PersonData.Item

/** Schema of {@link Medication}: any JSON object, kept whole. */
export const Medication: Schema.Codec<Medication> = PersonData.Item

export type GetOptions = PersonData.GetOptions

export type PersonUid = PersonData.PersonUid

/** What a request returns. */
export type MedicationResult<A> = Core.MedicationResult<A>

/** The medications service. */
export interface Service {
  /** The person's medications, each kept whole. */
  readonly get: (
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<MedicationResult<Medication>, ClinicalError>
  /** The person's medications, each decoded with `schema` (a failure is a `ResponseDecodeError`). */
  readonly getAs: <S extends Schema.Decoder<unknown>>(
    schema: S,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<MedicationResult<S["Type"]>, ClinicalError>
  /** The medications of many persons, as `PersonData.getMany` (one entry per person, in completion order). */
  readonly getMany: <E = never, R = never>(
    personUids: PersonData.Persons<E, R>,
    options?: PersonData.ManyOptions
  ) => Stream.Stream<PersonData.Entry<MedicationResult<Medication>>, E | InvalidRequest, R>
}

/** The medications service. */
export class MedicationService
  extends Context.Service<MedicationService, Service>()("effect-clinical/MedicationService")
{}

const asMedications = <A>({ items, raw }: PersonData.Result<A>): MedicationResult<A> => ({ medications: items, raw })

/** Builds the medications service over the services it needs. */
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

/** The medications service, over the services the application provides. */
export const layer: Layer.Layer<MedicationService, never, ClinicalConfig | HttpTransport | TokenService> = Layer
  .effect(MedicationService, make)

/** The person's medications, each kept whole, from the `MedicationService` in context. */
export const get = (
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<MedicationResult<Medication>, ClinicalError, MedicationService> =>
  MedicationService.use((service) => service.get(personUid, options))

/** The person's medications decoded with `schema`, from the `MedicationService` in context. */
export const getAs = <S extends Schema.Decoder<unknown>>(
  schema: S,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<MedicationResult<S["Type"]>, ClinicalError, MedicationService> =>
  MedicationService.use((service) => service.getAs(schema, personUid, options))

/** The medications of many persons, from the `MedicationService` in context (see `Service.getMany`). */
export const getMany = <E = never, R = never>(
  personUids: PersonData.Persons<E, R>,
  options?: PersonData.ManyOptions
): Stream.Stream<PersonData.Entry<MedicationResult<Medication>>, E | InvalidRequest, R | MedicationService> =>
  Stream.unwrap(MedicationService.useSync((service) => service.getMany(personUids, options)))
