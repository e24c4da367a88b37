/**
 * A person's medications: `POST {baseUrl}/api/clinical/medication/get`.
 *
 * The service does not publish the medication fields, so `get` keeps every item whole, exactly as
 * the server sent it; `getAs` decodes the items with a Schema of the caller's own.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest, ResponseDecodeError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as AuthorizedPost from "./internal/authorizedPost.js"
import { field, isRecord } from "./internal/json.js"
import { type DateRange, personRequest, type PersonUidInput } from "./internal/personRequest.js"
import { scrub } from "./internal/redaction.js"
import { describeParseError } from "./internal/response.js"
import { TokenService } from "./TokenService.js"

/** Path of the operation under `baseUrl`. */
export const path = "/api/clinical/medication/get"

/** One medication with every field the server sent (the fields are not published). */
export type Medication = { readonly [field: string]: unknown }

/** Schema of {@link Medication}: any JSON object, kept whole. */
export const Medication: Schema.Schema<Medication> = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Options of a request: the optional date range (the service filters by it; time parts are ignored). */
export type GetOptions = DateRange

/** A PersonUid, plain or `Redacted`. It identifies a patient: it is redacted from the moment it enters. */
export type PersonUid = PersonUidInput

/** What a request returns. */
export interface MedicationResult<A> {
  /** The items of the response's medication collection, decoded. */
  readonly medications: ReadonlyArray<A>
  /** The whole response body as parsed JSON, with every field the server sent (the envelope included). */
  readonly raw: unknown
}

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
}

/** The tag of the medication operation. */
export class MedicationService extends Context.Tag("effect-clinical/MedicationService")<MedicationService, Service>() {}

const COLLECTION = "Medications"

/**
 * Finds the medication collection: the body itself when it is an array; else the `Medications`
 * field (any letter case; `null` means none); else the only array-valued field whose name mentions
 * medication (`MedicationList`, ...). A body with no such collection is an error rather than an
 * empty list: reporting "no medications" for a response we could not read would be a clinical error.
 */
const collection = (json: unknown): Either.Either<ReadonlyArray<unknown>, string> => {
  if (Array.isArray(json)) return Either.right(json)
  if (!isRecord(json)) return Either.left("the body is neither a JSON object nor an array")
  const named = field(json, COLLECTION)
  if (Array.isArray(named)) return Either.right(named)
  if (named === null) return Either.right([])
  if (named !== undefined) return Either.left(`${COLLECTION} is not an array`)
  const arrays = Object.entries(json).filter(([key, value]) => /medication/i.test(key) && Array.isArray(value))
    .map(([, value]) => value as ReadonlyArray<unknown>)
  return arrays.length === 1
    ? Either.right(arrays[0]!)
    : Either.left(`the body has no ${COLLECTION} collection`)
}

/** Decodes the items of the collection, or says why not (by path and kind, never by value). */
type ItemsDecoder<A> = (items: ReadonlyArray<unknown>) => Either.Either<ReadonlyArray<A>, string>

/**
 * `get`'s decoder: what `Schema.Array(Medication)` accepts (every item a JSON object), checked
 * directly, and the items kept as parsed rather than copied. It runs on every call.
 */
const keepWhole: ItemsDecoder<Medication> = (items) => {
  for (let i = 0; i < items.length; i++) {
    if (!isRecord(items[i])) return Either.left(`${COLLECTION}[${i}] has the wrong type`)
  }
  return Either.right(items as ReadonlyArray<Medication>)
}

/** A caller's Schema compiles into a decoder once, not on every call. */
const decoders = new WeakMap<Schema.Schema.Any, ItemsDecoder<unknown>>()

const itemsDecoder = <A, I>(schema: Schema.Schema<A, I, never>): ItemsDecoder<A> => {
  let decoder = decoders.get(schema)
  if (decoder === undefined) {
    const decode = Schema.decodeUnknownEither(Schema.Array(schema))
    decoder = (items) => Either.mapLeft(decode(items), (error) => describeParseError(error, COLLECTION))
    decoders.set(schema, decoder)
  }
  return decoder as ItemsDecoder<A>
}

const SPAN_OPTIONS = {
  kind: "client",
  attributes: { "clinical.operation": "medications" },
  captureStackTrace: false
} as const

/** Builds the medication operation over the services it needs. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const post = AuthorizedPost.make(config, yield* HttpTransport, yield* TokenService)
    const url = `${config.baseUrl}${path}`

    const request = <A>(decodeItems: ItemsDecoder<A>, personUid: PersonUid, options: GetOptions | undefined) =>
      Effect.flatMap(
        personRequest("medications", personUid, options),
        (person) =>
          Effect.flatMap(
            post({
              operation: "medications",
              url,
              body: person.body,
              secrets: () => [person.personUid()],
              writes: false
            }),
            ({ json, status }): Effect.Effect<MedicationResult<A>, ResponseDecodeError> => {
              const decoded = Either.flatMap(collection(json), decodeItems)
              return Either.isRight(decoded)
                ? Effect.succeed({ medications: decoded.right, raw: json })
                : Effect.fail(
                  new ResponseDecodeError({
                    operation: "medications",
                    status,
                    // A decode failure's path may hold keys the server sent: scrub the PersonUid out.
                    reason: scrub(decoded.left, [person.personUid()])
                  })
                )
            }
          )
      )

    const traced = <A>(decodeItems: ItemsDecoder<A>, personUid: PersonUid, options: GetOptions | undefined) =>
      Effect.withSpan(request(decodeItems, personUid, options), "MedicationService.get", SPAN_OPTIONS)

    return MedicationService.of({
      get: (personUid, options) => traced(keepWhole, personUid, options),
      getAs: (schema, personUid, options) =>
        // A JavaScript caller can pass anything as the schema.
        Schema.isSchema(schema)
          ? traced(itemsDecoder(schema), personUid, options)
          : Effect.fail(new InvalidRequest({ operation: "medications", field: "schema", reason: "must be a Schema" }))
    })
  }
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
