/**
 * A person's data: every operation the service documents with the "BaseRequest" body (a PersonUid
 * and an optional date range) and the usual envelope, each from a one-line definition (the
 * definitions, the request body and the reading of the answer are the core's,
 * core/call/personRequest.ts and core/call/personData.ts, alike in both lines).
 *
 * ```ts
 * const allergies = PersonData.operation({ name: "allergies", path: "/api/clinical/allergy/get", collection: "Allergies" })
 * const { items } = yield* PersonData.get(allergies, personUid)
 * ```
 *
 * An operation gets the token handling, retries, deadline, concurrency bound, spans, metrics and
 * typed errors of every other; its `name` labels its errors, span and metrics.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as BatchTally from "../../core/batchTally.js"
import * as Core from "../../core/call/personData.js"
import * as Body from "../../core/call/personRequest.js"
import { Failed } from "../../core/call/response.js"
import { nameOf } from "../../core/operationName.js"
import * as Redaction from "../../core/redaction/redaction.js"
import { redactJson } from "../../core/redaction/redactJson.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as Batch from "./internal/batch/batch.js"
import * as AuthorizedPost from "./internal/call/authorizedPost.js"
import { describeIssue } from "./internal/call/decodeFailure.js"
import { line } from "./internal/line.js"
import { TokenService } from "./TokenService.js"

export {
  detailedEthnicities,
  ethnicities,
  medications,
  operation,
  uniqueDeviceIdentifiers
} from "../../core/call/personData.js"
export type { Definition, Operation } from "../../core/call/personData.js"

/** An item of the two ethnicity operations, as the service documents it. Other fields are dropped. */
export const Ethnicity = Schema.Struct({ Name: Schema.String, Code: Schema.String })

/** An item of the two ethnicity operations. */
export type Ethnicity = typeof Ethnicity.Type

/** One item with every field the server sent. */
export type Item = Core.Item

/** Schema of {@link Item}: any JSON object, kept whole. */
export const Item: Schema.Codec<Item> = Schema.Record(Schema.String, Schema.Unknown)

/** The optional date range of a request. A `Date` stands for its UTC calendar day. */
export type DateRange = Body.DateRange

/** Options of a request: the optional date range (the service filters by it; time parts are ignored). */
export type GetOptions = Core.GetOptions

/** A PersonUid, plain or `Redacted`. It identifies a patient: it is redacted from the moment it enters. */
export type PersonUid = string | Redacted.Redacted<string>

/** What a request returns. */
export type Result<A> = Core.Result<A>

/** What became of one person of a batch: `Success` (its result), `Failure` (its typed error), or `Skipped` (not sent). */
export type Outcome<A> = Batch.Outcome<A>

/** One person's outcome in a batch; `index` is the person's position in the input, from 0. */
export type Entry<A> = Batch.Entry<A>

/** The totals of a batch so far, given to `onProgress`. */
export type Progress = BatchTally.Progress

/** Why a batch stopped early and skipped the rest: `CredentialsRefused`, `InvalidRequest`, `TransportFailures` or `ServiceDown`. */
export type StopReason = BatchTally.StopReason

/** Transport failures in a row after which a batch skips the rest, unless `stopAfterTransportFailures` says otherwise. */
export const DEFAULT_STOP_AFTER_TRANSPORT_FAILURES: number = Batch.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES

/** Options of a batch: the date range of every request, and how the batch runs. */
export interface ManyOptions extends GetOptions, Batch.Options {}

/** The persons of a batch: any iterable (read lazily, so a generator works), or a Stream. */
export type Persons<E, R> = Iterable<PersonUid> | Stream.Stream<PersonUid, E, R>

/** The person-data operations. */
export interface Service {
  /** The person's items of `operation`, each kept whole. */
  readonly get: (
    operation: Core.Operation,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<Result<Item>, ClinicalError>
  /** The person's items of `operation`, each decoded with `schema` (a failure is a `ResponseDecodeError`). */
  readonly getAs: <S extends Schema.Decoder<unknown>>(
    operation: Core.Operation,
    schema: S,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<Result<S["Type"]>, ClinicalError>
  /**
   * The items of `operation` for many persons: one entry per person, in completion order, at most
   * `concurrency` calls in flight, memory independent of the input's size. One person's failure
   * never stops the others; a failure that would hit every person still to come (the credentials
   * refused, a refused operation or date range, `stopAfterTransportFailures` transport failures in a
   * row, the circuit open longer than `outagePatience`) skips the rest, each reported as `Skipped`.
   * Refused batch options fail the stream with `InvalidRequest` before anything is sent.
   */
  readonly getMany: <E = never, R = never>(
    operation: Core.Operation,
    personUids: Persons<E, R>,
    options?: ManyOptions
  ) => Stream.Stream<Entry<Result<Item>>, E | InvalidRequest, R>
}

/** The person-data operations. */
export class PersonData extends Context.Service<PersonData, Service>()("effect-clinical/PersonData") {}

/** Decodes the items of the collection, or says why not (by path and kind, never by value). */
type ItemsDecoder<A> = (op: Core.Operation, items: ReadonlyArray<unknown>) => ReadonlyArray<A> | Core.Unreadable

/** A caller's Schema compiles into a decoder once, not on every call. */
const decoders = new WeakMap<Schema.Top, ItemsDecoder<unknown>>()

const itemsDecoder = <A>(schema: Schema.Decoder<A>): ItemsDecoder<A> => {
  let decoder = decoders.get(schema)
  if (decoder === undefined) {
    const decode = Schema.decodeUnknownExit(Schema.Array(schema))
    decoder = (op, items) => {
      const exit = decode(items)
      if (Exit.isSuccess(exit)) return exit.value
      const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      return new Core.Unreadable(
        failure === undefined
          ? `${op.collection} could not be decoded`
          : describeIssue(failure.error.issue, op.collection)
      )
    }
    decoders.set(schema, decoder)
  }
  return decoder as ItemsDecoder<A>
}

/** What a call makes of its answer: the operation's collection, decoded, or the `ResponseDecodeError` it is. */
const finishItems = <A>(
  op: Core.Operation,
  url: string,
  decodeItems: ItemsDecoder<A>,
  redact: boolean
): AuthorizedPost.Finish<Result<A>> =>
({ json, secrets, status }) => {
  const body = redact ? redactJson(json, Redaction.redactor(secrets())) : json
  const collection = Core.collectionOf(op, body)
  const decoded = collection instanceof Core.Unreadable ? collection : decodeItems(op, collection)
  if (!(decoded instanceof Core.Unreadable)) return { items: decoded, raw: body }
  return new Failed({
    _tag: "ResponseDecodeError",
    operation: op.name,
    method: "POST",
    url,
    status,
    // A decode failure's path may hold keys the server sent: scrub every secret out.
    reason: Redaction.scrub(decoded.reason, secrets())
  })
}

/** Builds the person-data operations over the services they need. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const post = AuthorizedPost.forClient(config, yield* HttpTransport, yield* TokenService, yield* Effect.context())
    // An operation's URL, kept once its definition was checked: neither is redone on every call.
    const urls = new WeakMap<Core.Operation, string>()

    const call = <A>(
      op: Core.Operation,
      decodeItems: ItemsDecoder<A>,
      personUid: PersonUid,
      options: GetOptions | undefined
    ): Effect.Effect<Result<A>, ClinicalError> => {
      let url = urls.get(op)
      if (url === undefined) {
        const refused = Core.refusal(op)
        if (refused !== undefined) {
          return Effect.fail(
            new InvalidRequest({ operation: nameOf(op), field: refused.field, reason: refused.reason })
          )
        }
        urls.set(op, url = `${config.baseUrl}${op.path}`)
      }
      const checked = Body.personRequest(line.reveal(personUid), options)
      if (checked instanceof Body.Refusal) {
        return Effect.fail(new InvalidRequest({ operation: op.name, field: checked.field, reason: checked.reason }))
      }
      return post({
        operation: op.name,
        url,
        body: Redacted.make(checked.body),
        secrets: () => [checked.personUid],
        resendable: !op.writes || config.retryWrites,
        finish: finishItems(op, url, decodeItems, options?.redactEchoedSecrets === true),
        span: `PersonData.${op.name}`
      })
    }

    const get: Service["get"] = (op, personUid, options) => call(op, Core.keepWhole, personUid, options)

    return PersonData.of({
      get,
      getAs: (op, schema, personUid, options) =>
        // A JavaScript caller can pass anything as the schema.
        Schema.isSchema(schema)
          ? call(op, itemsDecoder(schema), personUid, options)
          : Effect.fail(new InvalidRequest({ operation: nameOf(op), field: "schema", reason: "must be a Schema" })),
      getMany: (op, personUids, options) =>
        Batch.many(
          nameOf(op),
          (personUid: PersonUid) => get(op, personUid, options),
          personUids,
          options,
          config.maxConcurrentRequests,
          config.maxRetries
        )
    })
  }
)

/** The person-data operations, over the services the application provides. */
export const layer: Layer.Layer<PersonData, never, ClinicalConfig | HttpTransport | TokenService> = Layer.effect(
  PersonData,
  make
)

/** The person's items of `operation`, each kept whole, from the `PersonData` in context. */
export const get = (
  operation: Core.Operation,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<Result<Item>, ClinicalError, PersonData> =>
  PersonData.use((service) => service.get(operation, personUid, options))

/** The items of `operation` for many persons, from the `PersonData` in context (see `Service.getMany`). */
export const getMany = <E = never, R = never>(
  operation: Core.Operation,
  personUids: Persons<E, R>,
  options?: ManyOptions
): Stream.Stream<Entry<Result<Item>>, E | InvalidRequest, R | PersonData> =>
  Stream.unwrap(PersonData.useSync((service) => service.getMany(operation, personUids, options)))

/** The person's items of `operation` decoded with `schema`, from the `PersonData` in context. */
export const getAs = <S extends Schema.Decoder<unknown>>(
  operation: Core.Operation,
  schema: S,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<Result<S["Type"]>, ClinicalError, PersonData> =>
  PersonData.use((service) => service.getAs(operation, schema, personUid, options))
