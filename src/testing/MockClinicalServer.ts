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
 * Its records are invented (see `fixturePersons`): the real fields are not published. The service is
 * the core's, once for both lines (core/testing: `operations`, each operation's handler; `faults`;
 * `mockState`, its state, counters and log; `mockHttp`, the loopback server); this module is its
 * Effect 3 shell: the clock, a Delay fault's sleep, `InvalidConfig`, the layers.
 */
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Effects from "../../core/effects.js"
import * as Faults from "../../core/testing/faults.js"
import {
  DEMO_APPLICATION_ID,
  FIXTURE_PERSONS,
  type MockDevice,
  type MockEthnicity,
  type MockMedication,
  type MockPerson
} from "../../core/testing/fixture.js"
import * as Generated from "../../core/testing/generatedPersons.js"
import * as MockHttp from "../../core/testing/mockHttp.js"
import * as MockService from "../../core/testing/mockService.js"
import * as MockState from "../../core/testing/mockState.js"
import { type Operation, paths } from "../../core/testing/operations.js"
import { InvalidConfig, type TransportError } from "../ClinicalError.js"
import * as HttpTransport from "../HttpTransport.js"
import type { Line } from "../internal/kind.js"

export type { MockDevice, MockEthnicity, MockMedication, MockPerson }
export { paths }
export type { Operation }

/** A fault the mock can inject; `Fault.status(503)`, `Fault.drop`, ... build them. */
export type Fault = Faults.Fault
/** A duration of this line in milliseconds; `undefined` when it is not a duration. */
const millisOf = (duration: Duration.DurationInput): number | undefined =>
  Option.getOrUndefined(Option.map(Duration.decodeUnknown(duration), Duration.toMillis))
/** Constructors of faults. */
export const Fault = Faults.faultsOf(millisOf)
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

/**
 * The first `count` of the same made-up persons every time (1 to 100,000; `mock-server
 * --persons N`), each with a unique PersonUid and pass code and a few invented records: for trials
 * at scale, `make({ persons: generatedPersons(10_000) })`. A count out of range throws a RangeError.
 */
export const generatedPersons: (count: number) => ReadonlyArray<MockPerson> = Generated.generatedPersons

/** One request as the mock received it, and how it answered. Holds secrets: it is the server's log. */
export type LoggedRequest = MockState.LoggedRequest

/** Running totals. */
export type Counters = MockState.Counters

/** Settings of a mock. */
export type Options = MockState.Options<Duration.DurationInput>

/** A running mock: its answers and its controls (core/testing/mockService.ts says what each does). */
export type Service = MockService.MockService<
  Line,
  Duration.DurationInput,
  HttpTransport.TransportRequest,
  HttpTransport.TransportResponse,
  TransportError,
  InvalidConfig
>

/** The tag of a mock in context. */
export class MockClinicalServer
  extends Context.Tag("effect-clinical/MockClinicalServer")<MockClinicalServer, Service>()
{}

/** Builds a mock. Its state lives as long as the returned service. Bad options fail with `InvalidConfig`. */
export const make = (options: Options = {}): Effect.Effect<Service, InvalidConfig> =>
  Effect.suspend(() => {
    const state = MockState.makeState(options, millisOf)
    return state instanceof MockState.MockState ? Effect.succeed(build(state)) : Effect.fail(new InvalidConfig(state))
  })

const build = (state: MockState.MockState<Duration.DurationInput>): Service =>
  MockService.mockServiceOf(state, {
    effects: Effects.of(Effect),
    now: Clock.currentTimeMillis,
    wireHeaders: HttpTransport.wireHeaders,
    wireBody: HttpTransport.wireBody,
    dropped: (request) => HttpTransport.transportError(request, "Network", "the mock dropped the connection"),
    refused: (refusal) => new InvalidConfig(refusal)
  })

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
export type ServeOptions = MockHttp.ServeOptions

/**
 * Serves `mock` over real HTTP (or HTTPS, with `tls`) on 127.0.0.1 until the scope closes, and
 * returns its base URL (`http://127.0.0.1:<port>`, or `https://localhost:<port>`). Closing the
 * scope closes every open connection at once, and drops the answers still delayed.
 */
export const serve = (
  mock: Service,
  options: ServeOptions = {}
): Effect.Effect<string, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    // Answers run on the caller's runtime (its clock), each interrupted when the server closes.
    const run = Runtime.runPromise(yield* Effect.runtime<never>())
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          MockHttp.listen(
            (request, signal) => run(mock.respond({ ...request, method: request.method as HttpMethod }), { signal }),
            options
          ),
        catch: (cause) => new HttpServerError.ServeError({ cause })
      }),
      (server) => Effect.promise(() => server.close())
    )
    return server.url
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
export type Started = MockState.Started<Duration.DurationInput>

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
    return MockService.startedOf<Line, Duration.DurationInput>(mock, url, promise, close)
  } catch (error) {
    await close()
    throw error
  }
}
