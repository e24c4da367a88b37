/**
 * A faithful stand-in for the service, for development and tests, served in memory (as an
 * `HttpTransport`, no sockets) or over real HTTP on 127.0.0.1: the Effect 4 line's.
 *
 * It behaves as the service's public help pages describe it (POST only, paths matched
 * case-insensitively, tokens with `TOKEN_EXPIRES` / `Date`, 401, 419, 400, the envelope); its
 * records are invented (see `fixturePersons`). The service is the core's, once for both lines
 * (core/testing: `operations`, `faults`, `mockState`, `mockHttp`); this module is its Effect 4
 * shell: all of its time comes from Effect's `Clock` (so `TestClock` drives it) plus a configurable
 * server clock offset, a Delay fault sleeps on it, and a refused setting is `InvalidConfig`.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Effects from "../../../core/effects.js"
import * as Faults from "../../../core/testing/faults.js"
import {
  DEMO_APPLICATION_ID,
  FIXTURE_PERSONS,
  type MockDevice,
  type MockEthnicity,
  type MockMedication,
  type MockPerson
} from "../../../core/testing/fixture.js"
import * as Generated from "../../../core/testing/generatedPersons.js"
import * as MockHttp from "../../../core/testing/mockHttp.js"
import * as MockService from "../../../core/testing/mockService.js"
import * as MockState from "../../../core/testing/mockState.js"
import { type Operation, paths } from "../../../core/testing/operations.js"
import { InvalidConfig, type TransportError } from "../ClinicalError.js"
import * as HttpTransport from "../HttpTransport.js"
import type { Line } from "../internal/kind.js"
import { line } from "../internal/line.js"

export type { MockDevice, MockEthnicity, MockMedication, MockPerson }
export { paths }
export type { Operation }

/** A duration of this line in milliseconds; `undefined` when it is not a duration. */
const millisOf = (duration: Duration.Input): number | undefined => {
  const decoded = line.decodeDuration(duration)
  return decoded === undefined ? undefined : Duration.toMillis(decoded)
}

/** A fault the mock can inject; `Fault.status(503)`, `Fault.drop`, ... build them. */
export type Fault = Faults.Fault
/** Constructors of faults. */
export const Fault = Faults.faultsOf(millisOf)
/** What the mock did with one request: answered it, or dropped the connection. */
export type Outcome = Faults.Outcome
/** Faults drawn by chance, from a seeded generator (so a run can be repeated exactly). */
export type RandomFaults = Faults.RandomFaults
/** What a fault applies to: an operation, or `any`. */
export type Target = Faults.Target
/** One request as the mock received it, and how it answered. Holds secrets: it is the server's log. */
export type LoggedRequest = MockState.LoggedRequest
/** Running totals. */
export type Counters = MockState.Counters
/** Settings of a mock. */
export type Options = MockState.Options<Duration.Input>
/** Where {@link serve} listens. */
export type ServeOptions = MockHttp.ServeOptions

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

/** A running mock: its answers and its controls (core/testing/mockService.ts says what each does). */
export type Service = MockService.MockService<
  Line,
  Duration.Input,
  HttpTransport.TransportRequest,
  HttpTransport.TransportResponse,
  TransportError,
  InvalidConfig
>

/** A mock in context. */
export class MockClinicalServer
  extends Context.Service<MockClinicalServer, Service>()("effect-clinical/MockClinicalServer")
{}

const build = (state: MockState.MockState<Duration.Input>): Service =>
  MockService.mockServiceOf(state, {
    effects: Effects.of(Effect),
    now: Clock.currentTimeMillis,
    wireHeaders: HttpTransport.wireHeaders,
    wireBody: HttpTransport.wireBody,
    dropped: (request) => HttpTransport.transportError(request, "Network", "the mock dropped the connection"),
    refused: (refusal) => new InvalidConfig(refusal)
  })

/** Builds a mock. Its state lives as long as the returned service. Bad options fail with `InvalidConfig`. */
export const make = (options: Options = {}): Effect.Effect<Service, InvalidConfig> =>
  Effect.suspend(() => {
    const state = MockState.makeState(options, millisOf)
    return state instanceof MockState.MockState ? Effect.succeed(build(state)) : Effect.fail(new InvalidConfig(state))
  })

/** A mock in context. */
export const layer = (options?: Options): Layer.Layer<MockClinicalServer, InvalidConfig> =>
  Layer.effect(MockClinicalServer, make(options))

/** An `HttpTransport` that sends every request to `mock`, in memory. */
export const transport = (mock: Service): HttpTransport.Service => HttpTransport.make(mock.handle)

/**
 * A new mock served in memory as the `HttpTransport`, with the mock itself in context for its
 * controls. No sockets, and `TestClock` drives it.
 */
export const layerTransport = (
  options?: Options
): Layer.Layer<MockClinicalServer | HttpTransport.HttpTransport, InvalidConfig> =>
  Layer.effect(HttpTransport.HttpTransport, MockClinicalServer.useSync(transport)).pipe(
    Layer.provideMerge(layer(options))
  )

/** Why the mock could not listen (the TLS material, the port), as this line's error. */
const listenFailure = (cause: unknown): InvalidConfig =>
  cause instanceof MockHttp.ListenFailure
    ? new InvalidConfig({ setting: cause.setting, reason: cause.reason })
    : new InvalidConfig({ setting: "port", reason: "cannot be listened on" })

/**
 * Serves `mock` over real HTTP (or HTTPS, with `tls`) on 127.0.0.1 until the scope closes, and
 * returns its base URL (`http://127.0.0.1:<port>`, or `https://localhost:<port>`). Closing the
 * scope closes every open connection at once and drops the answers still delayed. A port that
 * cannot be listened on, or TLS material refused, fails with `InvalidConfig`.
 */
export const serve = (
  mock: Service,
  options: ServeOptions = {}
): Effect.Effect<string, InvalidConfig, Scope.Scope> =>
  Effect.gen(function*() {
    // Answers run with the caller's services (its clock), each interrupted when the server closes.
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          MockHttp.listen(
            (request, signal) =>
              run(mock.respond({ ...request, method: request.method as HttpTransport.TransportRequest["method"] }), {
                signal
              }),
            options
          ),
        catch: listenFailure
      }),
      (server) => Effect.promise(() => server.close())
    )
    return server.url
  })

/** The base URL (`http://127.0.0.1:<port>`) of the mock a {@link layerServed} serves. */
export class BaseUrl extends Context.Service<BaseUrl, string>()("effect-clinical/MockClinicalServer/BaseUrl") {}

/**
 * A new mock served over loopback HTTP for as long as the layer lives: its controls
 * (`MockClinicalServer`) and its base URL (`BaseUrl`). No scope to manage by hand.
 */
export const layerServed = (
  options?: Options,
  serveOptions?: ServeOptions
): Layer.Layer<MockClinicalServer | BaseUrl, InvalidConfig> =>
  Layer.effectContext(
    Effect.gen(function*() {
      const mock = yield* make(options)
      const url = yield* serve(mock, serveOptions)
      return Context.make(MockClinicalServer, mock).pipe(Context.add(BaseUrl, url))
    })
  )

/** A mock served over loopback HTTP, driven with Promises: for tests written without Effect. */
export type Started = MockState.Started<Duration.Input>

/** Runs an effect, rejecting with its own typed error rather than a wrapper. */
const promise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Option.getOrElse(Cause.findErrorOption(exit.cause), () => Cause.squash(exit.cause))
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
    const url = await promise(Scope.provide(serve(mock, options), scope))
    return MockService.startedOf<Line, Duration.Input>(mock, url, promise, close)
  } catch (error) {
    await close()
    throw error
  }
}
