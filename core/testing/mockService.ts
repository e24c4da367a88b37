/**
 * A running mock as each line's `MockClinicalServer` gives it, declared and built once: its
 * controls over a line's effect type (`L`, see core/kind.ts), performed on the core's
 * {@link MockState} with the line's Effect (see core/effects.ts), and the Promise form a test
 * without Effect drives it with. Each line passes its clock, its request and errors
 * ({@link MockLine}); `D` is its duration, `Req`/`Res` its transport's request and response (the
 * mock's `Received`, as it is), `TErr` its `TransportError` and `Cfg` its `InvalidConfig`.
 */
import type { Effects } from "../effects.js"
import type { SettingRefusal } from "../errors.js"
import type { EffectKind, Kind } from "../kind.js"
import type { Fault, Outcome, RandomFaults, Target } from "./faults.js"
import { DEMO_APPLICATION_ID, type MockPerson } from "./fixture.js"
import type { Counters, LoggedRequest, MockState, Started } from "./mockState.js"
import type { MockRequest } from "./operations.js"

/** A running mock: its answers and its controls. */
export interface MockService<L extends EffectKind, D, Req, Res, TErr, Cfg> {
  /** The accepted ApplicationIds. */
  readonly applicationIds: ReadonlyArray<string>
  /** The persons it knows. */
  readonly persons: ReadonlyArray<MockPerson>
  /** Answers one request (for adapters: the in-memory transport and the HTTP server use this). */
  readonly respond: (request: Req) => Kind<L, Outcome>
  /** Answers one request as an in-memory transport would: a dropped connection is a `TransportError`. */
  readonly handle: (request: Req) => Kind<L, Res, TErr>
  /** Forgets every issued token, as a server that revoked them would. */
  readonly revokeAllTokens: Kind<L, void>
  /** Sets the lifetime of tokens issued from now on. */
  readonly setTokenLifetime: (lifetime: D) => Kind<L, void, Cfg>
  /** Sets the server clock offset (server minus local, ms; may be negative). */
  readonly setClockOffset: (millis: number) => Kind<L, void, Cfg>
  /** Queues faults for the next requests to `target`, one fault per request, in order. Anything else fails with `InvalidConfig`. */
  readonly injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => Kind<L, void, Cfg>
  /** Draws faults by chance for requests to `target` (after any queued ones); `undefined` stops it. */
  readonly setRandomFaults: (target: Target, faults: RandomFaults | undefined) => Kind<L, void>
  /** Removes queued and random faults. */
  readonly clearFaults: Kind<L, void>
  /** Running totals since start (or the last `resetCounters`). */
  readonly counters: Kind<L, Counters>
  /** The most recent requests, oldest first. */
  readonly requestLog: Kind<L, ReadonlyArray<LoggedRequest>>
  /** Zeroes the counters and empties the request log. */
  readonly resetCounters: Kind<L, void>
}

/** A transport's request, as far as the mock reads it itself (the rest through {@link MockLine}). */
type WireRequest = Pick<MockRequest, "method" | "url">

/** What the mock needs of its line. */
export interface MockLine<F, Req extends WireRequest> {
  readonly effects: Effects<F>
  /** Succeeds with the clock's time in ms (`TestClock`'s under test). */
  readonly now: F
  /** A request's headers and body revealed, as they went over the wire. */
  readonly wireHeaders: (request: Req) => Readonly<Record<string, string>>
  readonly wireBody: (request: Req) => string | undefined
  /** The `TransportError` of a connection the mock dropped. */
  readonly dropped: (request: Req) => unknown
  /** A refused setting as the line's `InvalidConfig`. */
  readonly refused: (refusal: SettingRefusal) => unknown
}

/** The service over `state`: every control one synchronous step of it, each answer at the line's time. */
export const mockServiceOf = <L extends EffectKind, D, Req extends WireRequest, Res, TErr, Cfg>(
  state: MockState<D>,
  line: MockLine<Kind<L, unknown, unknown>, Req>
): MockService<L, D, Req, Res, TErr, Cfg> => {
  const { effects } = line
  const sync = (step: () => unknown) => effects.sync(step)
  const checked = (step: () => SettingRefusal | undefined) =>
    effects.suspend(() => {
      const refusal = step()
      return refusal === undefined ? effects.void : effects.fail(line.refused(refusal))
    })
  const respond = (request: Req) =>
    effects.suspend(() => {
      const arrival = state.receive({
        method: request.method,
        url: request.url,
        headers: line.wireHeaders(request),
        body: line.wireBody(request)
      })
      const answer = effects.map(line.now, (now: number) => state.answer(arrival, now))
      return arrival.delayMillis === undefined ? answer : effects.andThen(effects.sleep(arrival.delayMillis), answer)
    })
  const service = {
    applicationIds: state.applicationIds,
    persons: state.persons,
    respond,
    handle: (request: Req) =>
      effects.flatMap(respond(request), (outcome: Outcome) =>
        outcome._tag === "Drop"
          ? effects.fail(line.dropped(request))
          : effects.succeed(outcome.response)),
    revokeAllTokens: sync(() => state.revokeAllTokens()),
    setTokenLifetime: (lifetime: D) => checked(() => state.setTokenLifetime(lifetime)),
    setClockOffset: (millis: number) => checked(() => state.setClockOffset(millis)),
    injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => checked(() => state.injectFaults(target, faults)),
    setRandomFaults: (target: Target, faults: RandomFaults | undefined) =>
      sync(() => state.setRandomFaults(target, faults)),
    clearFaults: sync(() => state.clearFaults()),
    counters: sync(() => state.counters()),
    requestLog: sync(() => state.requestLog()),
    resetCounters: sync(() => state.resetCounters())
  }
  // The members are the line's effects of the types declared (each line's suite runs them).
  return service as unknown as MockService<L, D, Req, Res, TErr, Cfg>
}

/**
 * A served mock driven with Promises: each control run by `promise` (which rejects with the
 * effect's own typed error), `close` stopping the server.
 */
export const startedOf = <L extends EffectKind, D>(
  mock: MockService<L, D, never, unknown, unknown, unknown>,
  url: string,
  promise: <A>(effect: Kind<L, A, unknown>) => Promise<A>,
  close: () => Promise<void>
): Started<D> => ({
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
})
