/**
 * A faithful stand-in for the service, for development and tests, served in memory (as an
 * `HttpTransport`, no sockets) or over real HTTP on 127.0.0.1.
 *
 * It behaves as the service's public help pages (https://openapi.intelichart.com/Help) describe it:
 * POST only (else 405), paths matched
 * case-insensitively, tokens shaped like the real ones with `TOKEN_EXPIRES` / `Date` headers, 401
 * for an unknown token or a mismatched `ApplicationId`, 419 for an expired token, 400 for missing
 * data, the `{ Success, ErrorType, ErrorMessage, ... }` envelope. All of its time comes from
 * Effect's `Clock` (so `TestClock` drives it) plus a configurable server clock offset.
 *
 * Its records are invented (see `fixturePersons`): the real fields are not published. The pieces:
 * `operations` (each operation's handler), `faults` (injection), `fixture` (the persons), this
 * module (the service, its controls and counters, and serving it).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as Https from "node:https"
import { isRecord } from "../../core/json.js"
import {
  DEMO_APPLICATION_ID,
  FIXTURE_PERSONS,
  type MockDevice,
  type MockEthnicity,
  type MockMedication,
  type MockPerson
} from "../../core/testing/fixture.js"
import { seededRandom } from "../../core/testing/seeded.js"
import { pathOf } from "../../core/url.js"
import { InvalidConfig, type TransportError } from "../ClinicalError.js"
import * as HttpTransport from "../HttpTransport.js"
import * as Faults from "./faults.js"
import {
  answer,
  type Behaviour,
  defaultBehaviour,
  type Operation,
  operationOf,
  OPERATIONS,
  paths,
  type ServerState
} from "./operations.js"

export type { MockDevice, MockEthnicity, MockMedication, MockPerson }
export { paths }
export type { Operation }

/** A fault the mock can inject; `Fault.status(503)`, `Fault.drop`, ... build them. */
export type Fault = Faults.Fault
/** Constructors of faults. */
export const Fault = Faults.Fault
/** What the mock did with one request: answered it, or dropped the connection. */
export type Outcome = Faults.Outcome
/** Faults drawn by chance, from a seeded generator (so a run can be repeated exactly). */
export type RandomFaults = Faults.RandomFaults
/** What a fault applies to: an operation, or `any`. */
export type Target = Faults.Target

/** The ApplicationId the mock accepts by default (a made-up GUID). */
export const demoApplicationId: string = DEMO_APPLICATION_ID

/** The built-in persons: three, with two to six invented medications each, ethnicities and devices. */
export const fixturePersons: ReadonlyArray<MockPerson> = FIXTURE_PERSONS

/** One request as the mock received it, and how it answered. Holds secrets: it is the server's log. */
export interface LoggedRequest {
  /** Server time (epoch ms). */
  readonly at: number
  readonly method: string
  readonly path: string
  readonly operation: Operation | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly status: number | "dropped"
}

/** Running totals. */
export interface Counters {
  readonly tokenRequests: number
  readonly tokensIssued: number
  readonly medicationRequests: number
  readonly authenticateRequests: number
  /** Requests by operation (token and authenticate included). */
  readonly requestsByOperation: Readonly<Record<Operation, number>>
  /** Every request but token requests: authenticate and the person-data operations. */
  readonly dataRequests: number
  readonly dropped: number
  /** Responses by status code. */
  readonly byStatus: Readonly<Record<number, number>>
}

/** Settings of a mock. */
export interface Options {
  /** ApplicationIds accepted at the token endpoint. Default: `[demoApplicationId]`. */
  readonly applicationIds?: ReadonlyArray<string> | undefined
  /** The persons it knows. Default: `fixturePersons`. */
  readonly persons?: ReadonlyArray<MockPerson> | undefined
  /** Lifetime of the tokens it issues. Default one hour. */
  readonly tokenLifetime?: Duration.DurationInput | undefined
  /** Server clock minus the local (Effect) clock, in milliseconds; may be negative. Default 0. */
  readonly clockOffsetMillis?: number | undefined
  /** Seed of the generator behind its tokens. Default 1. */
  readonly seed?: number | undefined
  /** Requests kept in the request log (the oldest are dropped). Default 10,000. */
  readonly requestLogLimit?: number | undefined
  /** The form of `TOKEN_EXPIRES`: `imf-fixdate` (default, as documented), `rfc850` or `asctime`. */
  readonly tokenExpiresForm?: Behaviour["tokenExpiresForm"] | undefined
  /** Whether issuing a token revokes the earlier ones of its ApplicationId (unknown of the real service). Default false. */
  readonly revokeOnIssue?: boolean | undefined
  /** Status of the `Success: false` answer for an unknown person: 400 (default) or 200 (both plausible). */
  readonly unknownPersonStatus?: number | undefined
  /** Status for a method other than POST. Default 405, as documented. */
  readonly wrongMethodStatus?: number | undefined
  /** `any-case` (default: `personuid` binds, as ASP.NET does) or `exact` (only `PersonUid` binds). */
  readonly fieldNames?: Behaviour["fieldNames"] | undefined
}

/** A running mock: its answers and its controls. */
export interface Service {
  /** The accepted ApplicationIds. */
  readonly applicationIds: ReadonlyArray<string>
  /** The persons it knows. */
  readonly persons: ReadonlyArray<MockPerson>
  /** Answers one request (for adapters: the in-memory transport and the HTTP server use this). */
  readonly respond: (request: HttpTransport.TransportRequest) => Effect.Effect<Outcome>
  /** Answers one request as an in-memory transport would: a dropped connection is a `TransportError`. */
  readonly handle: (
    request: HttpTransport.TransportRequest
  ) => Effect.Effect<HttpTransport.TransportResponse, TransportError>
  /** Forgets every issued token, as a server that revoked them would. */
  readonly revokeAllTokens: Effect.Effect<void>
  /** Sets the lifetime of tokens issued from now on. */
  readonly setTokenLifetime: (lifetime: Duration.DurationInput) => Effect.Effect<void, InvalidConfig>
  /** Sets the server clock offset (server minus local, ms; may be negative). */
  readonly setClockOffset: (millis: number) => Effect.Effect<void, InvalidConfig>
  /** Queues faults for the next requests to `target`, one fault per request, in order. Anything else fails with `InvalidConfig`. */
  readonly injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => Effect.Effect<void, InvalidConfig>
  /** Draws faults by chance for requests to `target` (after any queued ones); `undefined` stops it. */
  readonly setRandomFaults: (target: Target, faults: RandomFaults | undefined) => Effect.Effect<void>
  /** Removes queued and random faults. */
  readonly clearFaults: Effect.Effect<void>
  /** Running totals since start (or the last `resetCounters`). */
  readonly counters: Effect.Effect<Counters>
  /** The most recent requests, oldest first. */
  readonly requestLog: Effect.Effect<ReadonlyArray<LoggedRequest>>
  /** Zeroes the counters and empties the request log. */
  readonly resetCounters: Effect.Effect<void>
}

/** The tag of a mock in context. */
export class MockClinicalServer
  extends Context.Tag("effect-clinical/MockClinicalServer")<MockClinicalServer, Service>()
{}

interface Totals {
  byOperation: Record<Operation, number>
  dropped: number
  byStatus: Record<number, number>
}

const zeroTotals = (): Totals => ({
  byOperation: Object.fromEntries(OPERATIONS.map((operation) => [operation, 0])) as Record<Operation, number>,
  dropped: 0,
  byStatus: {}
})

const HUNDRED_YEARS = 100 * 365 * 24 * 60 * 60 * 1000

/** A lifetime in milliseconds; zero or negative is allowed (to test a client against bad tokens). */
const lifetimeOf = (lifetime: Duration.DurationInput): Effect.Effect<number, InvalidConfig> =>
  Option.match(Duration.decodeUnknown(lifetime), {
    onNone: () => Effect.fail(new InvalidConfig({ setting: "tokenLifetime", reason: "must be a duration" })),
    onSome: (duration) =>
      Duration.toMillis(duration) <= HUNDRED_YEARS
        ? Effect.succeed(Duration.toMillis(duration))
        : Effect.fail(new InvalidConfig({ setting: "tokenLifetime", reason: "must be at most 100 years" }))
  })

/** A clock offset: finite and within 100 years either way (an HTTP date must still exist). */
const offsetOf = (millis: number): Effect.Effect<number, InvalidConfig> =>
  Number.isFinite(millis) && Math.abs(millis) <= HUNDRED_YEARS
    ? Effect.succeed(millis)
    : Effect.fail(
      new InvalidConfig({
        setting: "clockOffsetMillis",
        reason: "must be a finite number of milliseconds within 100 years"
      })
    )

/** The option that a JavaScript caller (or a JSON file) got wrong, and why; `undefined` when all are fine. */
const refusedOption = (options: unknown): InvalidConfig | undefined => {
  const refuse = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
  if (typeof options !== "object" || options === null) return refuse("options", "must be an object")
  const { applicationIds, persons, requestLogLimit, seed } = options as Options
  if (
    applicationIds !== undefined &&
    !(Array.isArray(applicationIds) && applicationIds.every((id) => typeof id === "string"))
  ) {
    return refuse("applicationIds", "must be an array of strings")
  }
  if (
    persons !== undefined &&
    !(Array.isArray(persons) && persons.every((p) => isRecord(p) && typeof p.personUid === "string"))
  ) {
    return refuse("persons", "must be an array of persons, each with a personUid")
  }
  if (requestLogLimit !== undefined && !(Number.isInteger(requestLogLimit) && requestLogLimit >= 0)) {
    return refuse("requestLogLimit", "must be a whole number, 0 or more")
  }
  if (seed !== undefined && !Number.isFinite(seed)) return refuse("seed", "must be a finite number")
  const { fieldNames, revokeOnIssue, tokenExpiresForm, unknownPersonStatus, wrongMethodStatus } = options as Options
  if (tokenExpiresForm !== undefined && !["imf-fixdate", "rfc850", "asctime"].includes(tokenExpiresForm)) {
    return refuse("tokenExpiresForm", "must be imf-fixdate, rfc850 or asctime")
  }
  if (revokeOnIssue !== undefined && typeof revokeOnIssue !== "boolean") {
    return refuse("revokeOnIssue", "must be a boolean")
  }
  for (
    const [setting, status] of [["unknownPersonStatus", unknownPersonStatus], [
      "wrongMethodStatus",
      wrongMethodStatus
    ]] as const
  ) {
    if (status !== undefined && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
      return refuse(setting, "must be an HTTP status from 200 to 599")
    }
  }
  if (fieldNames !== undefined && fieldNames !== "any-case" && fieldNames !== "exact") {
    return refuse("fieldNames", "must be any-case or exact")
  }
  return undefined
}

/** Builds a mock. Its state lives as long as the returned service. Bad options fail with `InvalidConfig`. */
export const make = (options: Options = {}): Effect.Effect<Service, InvalidConfig> => {
  const refused = refusedOption(options)
  if (refused !== undefined) return Effect.fail(refused)
  return Effect.all([lifetimeOf(options.tokenLifetime ?? Duration.hours(1)), offsetOf(options.clockOffsetMillis ?? 0)])
    .pipe(Effect.map(([initialLifetime, initialOffset]) => build(options, initialLifetime, initialOffset)))
}

const build = (options: Options, initialLifetime: number, initialOffset: number): Service => {
  const applicationIds = options.applicationIds ?? [DEMO_APPLICATION_ID]
  const accepted = new Set(applicationIds.map((id) => id.toLowerCase()))
  const persons = options.persons ?? FIXTURE_PERSONS
  const byUid = new Map(persons.map((person) => [person.personUid, person]))
  const logLimit = options.requestLogLimit ?? 10_000
  // Plain mutable state: every read and write happens inside one synchronous Effect step, and
  // JavaScript runs one step at a time, so no update can interleave with another.
  const state: ServerState = {
    behaviour: {
      tokenExpiresForm: options.tokenExpiresForm ?? defaultBehaviour.tokenExpiresForm,
      revokeOnIssue: options.revokeOnIssue ?? defaultBehaviour.revokeOnIssue,
      unknownPersonStatus: options.unknownPersonStatus ?? defaultBehaviour.unknownPersonStatus,
      wrongMethodStatus: options.wrongMethodStatus ?? defaultBehaviour.wrongMethodStatus,
      fieldNames: options.fieldNames ?? defaultBehaviour.fieldNames
    },
    accepted,
    persons,
    byUid,
    random: seededRandom(options.seed ?? 1),
    lifetimeMillis: initialLifetime,
    tokens: new Map(),
    tokensIssued: 0
  }
  let clockOffset = initialOffset
  let totals = zeroTotals()
  let log: Array<LoggedRequest> = []
  const faults = Faults.schedule()

  const serverNow = Effect.map(Clock.currentTimeMillis, (now) => now + clockOffset)

  const record = (
    request: HttpTransport.TransportRequest,
    path: string,
    operation: Operation | undefined,
    at: number,
    status: number | "dropped"
  ) => {
    if (status === "dropped") totals.dropped++
    else totals.byStatus[status] = (totals.byStatus[status] ?? 0) + 1
    log.push({
      at,
      method: request.method,
      path,
      operation,
      headers: HttpTransport.wireHeaders(request),
      body: HttpTransport.wireBody(request),
      status
    })
    if (log.length > logLimit) log = log.slice(log.length - logLimit)
  }

  const respond = (request: HttpTransport.TransportRequest): Effect.Effect<Outcome> =>
    Effect.gen(function*() {
      const path = pathOf(request.url)
      const operation = operationOf(path)
      if (operation !== undefined) totals.byOperation[operation]++
      let fault = faults.next(operation)
      if (fault?._tag === "Delay") {
        yield* Effect.sleep(Duration.millis(fault.millis))
        fault = undefined
      }
      const now = yield* serverNow
      const outcome = Faults.applyFault(fault, operation, now, () => answer(state, request, operation, now))
      record(request, path, operation, now, outcome._tag === "Drop" ? "dropped" : outcome.response.status)
      return outcome
    })

  const handle = (request: HttpTransport.TransportRequest) =>
    Effect.flatMap(respond(request), (outcome) =>
      outcome._tag === "Drop"
        ? Effect.fail(HttpTransport.transportError(request, "Network", "the mock dropped the connection"))
        : Effect.succeed(outcome.response))

  return MockClinicalServer.of({
    applicationIds,
    persons,
    respond,
    handle,
    revokeAllTokens: Effect.sync(() => {
      state.tokens = new Map()
    }),
    setTokenLifetime: (lifetime) =>
      Effect.map(lifetimeOf(lifetime), (millis) => {
        state.lifetimeMillis = millis
      }),
    setClockOffset: (millis) =>
      Effect.map(offsetOf(millis), (valid) => {
        clockOffset = valid
      }),
    injectFaults: (target, injected) =>
      Array.isArray(injected) && injected.every(Faults.isFault)
        ? Effect.sync(() => faults.inject(target, injected))
        : Effect.fail(
          new InvalidConfig({ setting: "faults", reason: "must be an array of MockClinicalServer.Fault values" })
        ),
    setRandomFaults: (target, config) => Effect.sync(() => faults.setRandom(target, config)),
    clearFaults: Effect.sync(() => faults.clear()),
    counters: Effect.sync(() => ({
      tokenRequests: totals.byOperation.token,
      tokensIssued: state.tokensIssued,
      medicationRequests: totals.byOperation.medications,
      authenticateRequests: totals.byOperation.authenticate,
      requestsByOperation: { ...totals.byOperation },
      dataRequests: OPERATIONS.reduce(
        (sum, operation) => sum + (operation === "token" ? 0 : totals.byOperation[operation]),
        0
      ),
      dropped: totals.dropped,
      byStatus: { ...totals.byStatus }
    })),
    requestLog: Effect.sync(() => [...log]),
    resetCounters: Effect.sync(() => {
      totals = zeroTotals()
      state.tokensIssued = 0
      log = []
    })
  })
}

/** A mock in context. */
export const layer = (options?: Options): Layer.Layer<MockClinicalServer, InvalidConfig> =>
  Layer.effect(MockClinicalServer, make(options))

/** An `HttpTransport` that sends every request to `mock`, in memory. */
export const transport = (mock: Service): HttpTransport.Service => HttpTransport.memory(mock.handle)

/**
 * A new mock served in memory as the `HttpTransport`, with the mock itself in context for its
 * controls. No sockets, and `TestClock` drives it.
 */
export const layerTransport = (
  options?: Options
): Layer.Layer<MockClinicalServer | HttpTransport.HttpTransport, InvalidConfig> =>
  Layer.effect(HttpTransport.HttpTransport, Effect.map(MockClinicalServer, transport)).pipe(
    Layer.provideMerge(layer(options))
  )

/** Where {@link serve} listens. */
export interface ServeOptions {
  /** Default 0: any free port. */
  readonly port?: number | undefined
  /**
   * Serve over HTTPS, to test a private CA or client certificates: the server's certificate and
   * key (PEM), and with `requestCert` the CA whose client certificates it takes (others are
   * refused in the handshake). The base URL names `host` (default `localhost`, which the
   * certificate must name); the server listens on 127.0.0.1 either way.
   */
  readonly tls?: {
    readonly cert: string
    readonly key: string
    readonly ca?: string | undefined
    readonly requestCert?: boolean | undefined
    readonly host?: string | undefined
  } | undefined
}

/** What a request still being answered when the mock closes gets: its connection closed. */
const DROPPED: Outcome = { _tag: "Drop" }

/**
 * Serves `mock` over real HTTP (or HTTPS, with `tls`) on 127.0.0.1 until the scope closes, and
 * returns its base URL (`http://127.0.0.1:<port>`, or `https://localhost:<port>`). Closing the
 * scope closes every open connection at once.
 */
export const serve = (
  mock: Service,
  options: ServeOptions = {}
): Effect.Effect<string, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const tls = options.tls
    // An HTTPS server is an HTTP server over TLS: it emits the same requests.
    const nodeServer = tls === undefined ? Http.createServer() : Https.createServer({
      cert: tls.cert,
      key: tls.key,
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      requestCert: tls.requestCert === true,
      rejectUnauthorized: tls.requestCert === true
    }) as unknown as Http.Server
    const server = yield* NodeHttpServer.make(() => nodeServer, { port: options.port ?? 0, host: "127.0.0.1" })
    // Registered after the server, so they run first on close: the server stops now, mid-request
    // too, and an answer still delayed is dropped (its timer would keep the process alive).
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    const answering = yield* FiberSet.make<Outcome>()
    yield* server.serve(
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        // Answered in a fiber of the mock's own, not the handler's: a client that gives up does
        // not stop the mock (it records what it answered), and closing the mock stops every answer.
        const answer = yield* FiberSet.run(
          answering,
          // Interruptible, though the server runs its handler in a region that is not.
          Effect.interruptible(mock.respond({
            method: request.method,
            url: `http://127.0.0.1${request.url}`,
            headers: request.headers,
            body
          }))
        )
        const outcome = Exit.getOrElse(yield* Fiber.await(answer), () => DROPPED)
        if (outcome._tag === "Drop") {
          NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
          return HttpServerResponse.empty({ status: 500 })
        }
        const { "content-type": contentType, ...headers } = outcome.response.headers
        return HttpServerResponse.text(outcome.response.body, {
          status: outcome.response.status,
          headers,
          ...(contentType === undefined ? {} : { contentType })
        })
      })
    )
    // After serve's own finalizer in the list, so before it on close: serve waits for its handlers.
    yield* Effect.addFinalizer(() => FiberSet.clear(answering))
    const address = server.address
    const origin = tls === undefined ? "http://127.0.0.1" : `https://${tls.host ?? "localhost"}`
    return address._tag === "TcpAddress" ? `${origin}:${address.port}` : origin
  })

/** The base URL (`http://127.0.0.1:<port>`) of the mock a {@link layerServed} serves. */
export class BaseUrl extends Context.Tag("effect-clinical/MockClinicalServer/BaseUrl")<BaseUrl, string>() {}

/**
 * A new mock served over loopback HTTP for as long as the layer lives: its controls
 * (`MockClinicalServer`) and its base URL (`BaseUrl`). No scope to manage by hand.
 */
export const layerServed = (
  options?: Options,
  serveOptions?: ServeOptions
): Layer.Layer<MockClinicalServer | BaseUrl, InvalidConfig | HttpServerError.ServeError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const mock = yield* make(options)
      const url = yield* serve(mock, serveOptions)
      return Context.make(MockClinicalServer, mock).pipe(Context.add(BaseUrl, url))
    })
  )

/** A mock served over loopback HTTP, driven with Promises: for tests written without Effect. */
export interface Started {
  /** Its base URL, `http://127.0.0.1:<port>`: the `baseUrl` of a client. */
  readonly url: string
  /** An ApplicationId it accepts. */
  readonly applicationId: string
  /** The persons it knows. */
  readonly persons: ReadonlyArray<MockPerson>
  readonly counters: () => Promise<Counters>
  readonly requestLog: () => Promise<ReadonlyArray<LoggedRequest>>
  readonly injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => Promise<void>
  readonly setRandomFaults: (target: Target, faults: RandomFaults | undefined) => Promise<void>
  readonly clearFaults: () => Promise<void>
  readonly revokeAllTokens: () => Promise<void>
  readonly setTokenLifetime: (lifetime: Duration.DurationInput) => Promise<void>
  readonly setClockOffset: (millis: number) => Promise<void>
  readonly resetCounters: () => Promise<void>
  /** Stops it, closing every open connection. */
  readonly close: () => Promise<void>
  readonly [Symbol.asyncDispose]: () => Promise<void>
}

/** Runs an effect, rejecting with its own typed error rather than a wrapper. */
const promise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.squash(exit.cause))
  })

/**
 * Starts a mock over loopback HTTP (HTTPS with `tls`) and resolves once it listens. Bad options reject with
 * `InvalidConfig`. `await mock.close()` (or `await using`) stops it.
 */
export const start = async (options?: Options & ServeOptions): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  try {
    const mock = await promise(make(options))
    const url = await promise(Scope.extend(serve(mock, options), scope))
    return {
      url,
      applicationId: mock.applicationIds[0] ?? DEMO_APPLICATION_ID,
      persons: mock.persons,
      counters: () => promise(mock.counters),
      requestLog: () => promise(mock.requestLog),
      injectFaults: (target, faults) => promise(mock.injectFaults(target, faults)),
      setRandomFaults: (target, faults) => promise(mock.setRandomFaults(target, faults)),
      clearFaults: () => promise(mock.clearFaults),
      revokeAllTokens: () => promise(mock.revokeAllTokens),
      setTokenLifetime: (lifetime) => promise(mock.setTokenLifetime(lifetime)),
      setClockOffset: (millis) => promise(mock.setClockOffset(millis)),
      resetCounters: () => promise(mock.resetCounters),
      close,
      [Symbol.asyncDispose]: close
    }
  } catch (error) {
    await close()
    throw error
  }
}
