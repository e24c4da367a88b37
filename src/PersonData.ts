/**
 * A person's data: every operation the service documents with the "BaseRequest" body (a PersonUid
 * and an optional date range) and the usual envelope, each from a one-line definition.
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
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import type * as BatchTally from "../core/batchTally.js"
import * as Core from "../core/call/personData.js"
import type { Operation } from "../core/call/personData.js"
import { nameOf } from "../core/operationName.js"
import { redactJson } from "../core/redaction/redactJson.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest, ResponseDecodeError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as Batch from "./internal/batch/batch.js"
import * as AuthorizedPost from "./internal/call/authorizedPost.js"
import { personRequest, type PersonUidInput } from "./internal/call/personRequest.js"
import { describeParseError } from "./internal/call/response.js"
import * as FiberSpan from "./internal/observability/fiberSpan.js"
import { redactor, scrub } from "./internal/redaction/redaction.js"
import { TokenService } from "./TokenService.js"

export {
  detailedEthnicities,
  ethnicities,
  medications,
  operation,
  uniqueDeviceIdentifiers
} from "../core/call/personData.js"
export type { Definition, Operation } from "../core/call/personData.js"

/** An item of the two ethnicity operations, as the service documents it. Other fields are dropped. */
export const Ethnicity = Schema.Struct({ Name: Schema.String, Code: Schema.String })

/** An item of the two ethnicity operations. */
export type Ethnicity = typeof Ethnicity.Type

/** One item with every field the server sent. */
export type Item = Core.Item

/** Schema of {@link Item}: any JSON object, kept whole. */
export const Item: Schema.Schema<Item> = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Options of a request: the optional date range (the service filters by it; time parts are ignored). */
export type GetOptions = Core.GetOptions

/** A PersonUid, plain or `Redacted`. It identifies a patient: it is redacted from the moment it enters. */
export type PersonUid = PersonUidInput

/** What a request returns. */
export type Result<A> = Core.Result<A>

/**
 * A {@link Result}, made on every call: a class rather than an object literal (which V8 may
 * pretenure under load, and which would then keep the parsed answer alive; see `internal/callback`).
 */
class ItemsResult<A> implements Result<A> {
  constructor(readonly items: ReadonlyArray<A>, readonly raw: unknown) {}
}

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
    operation: Operation,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<Result<Item>, ClinicalError>
  /** The person's items of `operation`, each decoded with `schema` (a failure is a `ResponseDecodeError`). */
  readonly getAs: <A, I>(
    operation: Operation,
    schema: Schema.Schema<A, I, never>,
    personUid: PersonUid,
    options?: GetOptions
  ) => Effect.Effect<Result<A>, ClinicalError>
  /**
   * The items of `operation` for many persons: one entry per person, in completion order, at most
   * `concurrency` calls in flight, memory independent of the input's size. One person's failure
   * never stops the others; a failure that would hit every person still to come (the credentials
   * refused, a refused operation or date range, `stopAfterTransportFailures` transport failures in a
   * row) skips the rest, each reported as `Skipped`. Refused batch options fail the stream with
   * `InvalidRequest` before anything is sent.
   */
  readonly getMany: <E = never, R = never>(
    operation: Operation,
    personUids: Persons<E, R>,
    options?: ManyOptions
  ) => Stream.Stream<Entry<Result<Item>>, E | InvalidRequest, R>
}

/** The tag of the person-data operations. */
export class PersonData extends Context.Tag("effect-clinical/PersonData")<PersonData, Service>() {}

/** What a call needs of a checked operation, worked out once. */
interface Prepared {
  readonly url: string
  readonly spanName: string
  readonly attributes: Readonly<Record<string, unknown>>
}

/**
 * Decodes the items of the collection, or says why not (by path and kind, never by value): the
 * items themselves, or the core's `Unreadable` (no wrapper on the common path).
 */
type ItemsDecoder<A> = (op: Operation, items: ReadonlyArray<unknown>) => ReadonlyArray<A> | Core.Unreadable

/** A caller's Schema compiles into a decoder once, not on every call. */
const decoders = new WeakMap<Schema.Schema.Any, ItemsDecoder<unknown>>()

const itemsDecoder = <A, I>(schema: Schema.Schema<A, I, never>): ItemsDecoder<A> => {
  let decoder = decoders.get(schema)
  // Stryker disable next-line ConditionalExpression: equivalent in what it decodes, the cache saves compiling the schema on every call
  if (decoder === undefined) {
    const decode = Schema.decodeUnknownEither(Schema.Array(schema))
    decoder = (op, items) => {
      const decoded = decode(items)
      return Either.isRight(decoded)
        ? decoded.right
        : new Core.Unreadable(describeParseError(decoded.left, op.collection))
    }
    decoders.set(schema, decoder)
  }
  return decoder as ItemsDecoder<A>
}

/**
 * What a call needs of its operation (checked, its URL, its span's name and attributes), worked
 * out once per operation rather than on every call. A refused definition is not kept: `undefined`.
 */
const preparer = (baseUrl: string) => {
  const prepared = new WeakMap<Operation, Prepared>()
  return (op: Operation): Prepared | undefined => {
    const known = prepared.get(op)
    // Stryker disable next-line ConditionalExpression: equivalent in what it prepares, the cache saves checking the definition on every call
    if (known !== undefined) return known
    if (Core.refusal(op) !== undefined) return undefined
    const ready: Prepared = {
      url: `${baseUrl}${op.path}`,
      spanName: `PersonData.${op.name}`,
      attributes: { "clinical.operation": op.name }
    }
    prepared.set(op, ready)
    return ready
  }
}

/** What a call makes of its answer: the operation's collection, decoded, or the `ResponseDecodeError` it is. */
const finishItems = <A>(
  op: Operation,
  url: string,
  decodeItems: ItemsDecoder<A>,
  redact: boolean
): AuthorizedPost.Finish<Result<A>> =>
({ json, secrets, status }) => {
  const body = redact ? redactJson(json, redactor(secrets())) : json
  const items = Core.collectionOf(op, body)
  const decoded = items instanceof Core.Unreadable ? items : decodeItems(op, items)
  return decoded instanceof Core.Unreadable
    ? Either.left(
      new ResponseDecodeError({
        operation: op.name,
        method: "POST",
        url,
        status,
        // A decode failure's path may hold keys the server sent: scrub every secret out.
        reason: scrub(decoded.reason, secrets())
      })
    )
    : Either.right(new ItemsResult(decoded, body))
}

/** A call no one could see the spans of makes none: `traced` false. */
const UNTRACED = false

/** Builds the person-data operations over the services they need. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const post = AuthorizedPost.forClient(config, yield* HttpTransport, yield* TokenService)
    const preparedOf = preparer(config.baseUrl)

    /**
     * The call, under `span` when given (made from `fiber`; the call ends it, or this does when
     * the request is refused before anything is sent).
     */
    const request = <A>(
      op: Operation,
      ready: Prepared,
      decodeItems: ItemsDecoder<A>,
      personUid: PersonUid,
      options: GetOptions | undefined,
      fiber: FiberSpan.AnyFiber,
      span: Tracer.Span | undefined,
      traced: boolean
    ): Effect.Effect<Result<A>, ClinicalError> => {
      const checked = personRequest(op.name, personUid, options)
      if (Either.isLeft(checked)) {
        if (span !== undefined) FiberSpan.end(fiber, span, Exit.fail(checked.left))
        return Effect.fail(checked.left)
      }
      const person = checked.right
      const url = ready.url
      return post(
        new AuthorizedPost.Call(
          op.name,
          url,
          person.body,
          () => [person.personUid()],
          !op.writes || config.retryWrites,
          finishItems(op, url, decodeItems, options?.redactEchoedSecrets === true),
          span,
          traced
        ),
        // The fiber that runs the call, unless the call runs later under `Effect.withSpan` (see `traced`).
        // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator: equivalent, given the fiber under Effect.withSpan the call still takes the Effect path (the fiber's span asks for it), which reads the span when it runs; given none elsewhere, it takes the same fiber when it runs
        span === undefined && traced ? undefined : fiber
      )
    }

    const traced = <A>(
      op: Operation,
      decodeItems: ItemsDecoder<A>,
      personUid: PersonUid,
      options: GetOptions | undefined
    ): Effect.Effect<Result<A>, ClinicalError> => {
      const ready = preparedOf(op)
      if (ready === undefined) {
        const { field, reason } = Core.refusal(op)!
        return Effect.fail(new InvalidRequest({ operation: nameOf(op), field, reason }))
      }
      // The call's span, made from the fiber and handed to the call rather than made current
      // (Effect.withSpan would copy the fiber's context on every call); the same span either way.
      // None at all when no one could see it (no tracer installed: see `FiberSpan.observed`).
      return Effect.withFiberRuntime((fiber) =>
        !FiberSpan.observed(fiber, config.tracePropagation)
          ? request(op, ready, decodeItems, personUid, options, fiber, undefined, UNTRACED)
          : FiberSpan.canMake(fiber)
          ? request(
            op,
            ready,
            decodeItems,
            personUid,
            options,
            fiber,
            FiberSpan.make(fiber, ready.spanName, "internal", ready.attributes),
            true
          )
          : Effect.withSpan(
            request(op, ready, decodeItems, personUid, options, fiber, undefined, true),
            ready.spanName,
            // Stryker disable next-line BooleanLiteral: a stack captured here would name only this line, in a failure's pretty print; not captured, to save the time
            { attributes: ready.attributes, captureStackTrace: false }
          )
      )
    }

    const get: Service["get"] = (op, personUid, options) => traced(op, Core.keepWhole, personUid, options)

    return PersonData.of({
      get,
      getAs: (op, schema, personUid, options) =>
        // A JavaScript caller can pass anything as the schema.
        Schema.isSchema(schema)
          ? traced(op, itemsDecoder(schema), personUid, options)
          : Effect.fail(
            new InvalidRequest({ operation: nameOf(op), field: "schema", reason: "must be a Schema" })
          ),
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
  operation: Operation,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<Result<Item>, ClinicalError, PersonData> =>
  Effect.flatMap(PersonData, (service) => service.get(operation, personUid, options))

/** The items of `operation` for many persons, from the `PersonData` in context (see `Service.getMany`). */
export const getMany = <E = never, R = never>(
  operation: Operation,
  personUids: Persons<E, R>,
  options?: ManyOptions
): Stream.Stream<Entry<Result<Item>>, E | InvalidRequest, R | PersonData> =>
  Stream.unwrap(Effect.map(PersonData, (service) => service.getMany(operation, personUids, options)))

/** The person's items of `operation` decoded with `schema`, from the `PersonData` in context. */
export const getAs = <A, I>(
  operation: Operation,
  schema: Schema.Schema<A, I, never>,
  personUid: PersonUid,
  options?: GetOptions
): Effect.Effect<Result<A>, ClinicalError, PersonData> =>
  Effect.flatMap(PersonData, (service) => service.getAs(operation, schema, personUid, options))
