/**
 * A data call: POST with the bearer token and the ApplicationId, answered as JSON, made resilient.
 * The decisions are the core's call machine's (core/call/callMachine.ts: attempts, retries with
 * backoff and `Retry-After`, the deadline, a 401/419 refreshed once, load control); this is its
 * runner on Effect 3, performing each action it answers with (the Effect 4 line runs the same
 * machine).
 *
 * This is the hot path of every call, so it is written for cost: a call whose token is cached,
 * whose circuit is closed and whose spans can be made in a callback takes the common path (see
 * `common`), with no timer of its own (the transport's timeout, bounded by the deadline, does the
 * work), metrics tagged once, secrets gathered only when an error needs them.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Metric from "effect/Metric"
import type * as Redacted from "effect/Redacted"
import type * as Tracer from "effect/Tracer"
import { type Action, CallMachine } from "../../../core/call/callMachine.js"
import { CallRules, type Durations } from "../../../core/call/callRules.js"
import { type CallLine, CallRunner, type Decision } from "../../../core/call/callRunner.js"
import { PerClient } from "../../../core/call/perClient.js"
import { Answer } from "../../../core/call/response.js"
import type * as Core from "../../../core/errors.js"
import { dispatchOf } from "../../../core/transport/dispatchPairs.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import { fromCore } from "../fromCore.js"
import * as FiberSpan from "../observability/fiberSpan.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as Telemetry from "../observability/telemetry.js"
import { type AnyEffect, tokenLine } from "../token/tokenLine.js"
import { labelled } from "./attempt.js"
import { type AnyCall, type Call } from "./call.js"
import { CallMetrics, refusedByBudget, refusedByCircuit } from "./callMetrics.js"
import { commonPath, type Machine, type Runner } from "./commonPath.js"
import * as Gate from "./gate.js"
import { nanos } from "./loadControl.js"
import { readJson } from "./response.js"
import { DataRequest } from "./secretText.js"

export { Call, dataHeaders, type Finish, type JsonResponse } from "./call.js"

type Response = HttpTransport.TransportResponse

/**
 * Makes one call and returns what it makes of the answer, or the typed error it ended in. A caller
 * that already holds the fiber that will run the call (and hands the call its span) may pass it,
 * saving the step that would look it up.
 */
export type AuthorizedPost = <A>(call: Call<A>, fiber?: FiberSpan.AnyFiber) => Effect.Effect<A, ClinicalError>

/** How this line reads durations and its clock, for the client's rules. */
const DURATIONS: Durations<Duration.Duration, Clock.Clock> = {
  toMillis: Duration.toMillis,
  format: Duration.format,
  nanos
}

/** The calls of one client: the machine's client, and the runner of its actions. */
class Caller extends CallRules<
  TokenService.AccessToken,
  ClinicalError,
  Clock.Clock,
  Redacted.Redacted<string>,
  Duration.Duration,
  Gate.Gate
> implements Runner {
  readonly wrap: (error: Core.ClinicalError) => ClinicalError = fromCore
  readonly tracePropagation: boolean
  private readonly metrics = new CallMetrics()
  private readonly dispatch: HttpTransport.Service["dispatch"]
  private readonly runner: CallRunner<
    AnyEffect,
    TokenService.AccessToken,
    ClinicalError,
    Clock.Clock,
    AnyCall,
    Response
  >

  constructor(
    private readonly config: ClinicalConfig.Service,
    private readonly transport: HttpTransport.Service,
    private readonly tokens: TokenService.Service
  ) {
    super(
      config,
      DURATIONS,
      Gate.make(config.maxConcurrentRequests),
      tokens,
      (permits) => Telemetry.concurrencyLimit.unsafeUpdate(permits, [])
    )
    this.tracePropagation = config.tracePropagation
    // Only a transport whose send is the library's own (see core/transport/dispatchPairs).
    this.dispatch = dispatchOf(transport)
    this.runner = new CallRunner(this.lineOf())
  }

  /** Starts a call on the given fiber: on the common path when it can (see `commonPath`), else on the Effect path. */
  start<A>(fiber: FiberSpan.AnyFiber, call: Call<A>): Effect.Effect<A, ClinicalError> {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const machine: Machine = new CallMachine<TokenService.AccessToken, ClinicalError, Clock.Clock>(
      this,
      call.operation,
      call.url,
      call.resendable,
      clock
    )
    const action = machine.start(clock.unsafeCurrentTimeMillis())
    const dispatch = this.dispatch
    return action === "Turn" && dispatch !== undefined && !machine.probing() &&
        !(call.traced && !FiberSpan.canMake(fiber, this.spanOf(fiber, call)))
      ? commonPath(this, fiber, call, machine, dispatch, clock)
      : this.onEffectPath(fiber, call, this.attempt(call, machine, action))
  }

  /** Where the call's attempts and attributes go: its own span, else the current one (`Effect.withSpan`'s). */
  spanOf(fiber: FiberSpan.AnyFiber, call: AnyCall): Tracer.AnySpan | undefined {
    return call.traced ? call.span ?? fiber.currentSpan : undefined
  }

  private record(
    fiber: FiberSpan.AnyFiber,
    call: AnyCall,
    m: Machine,
    status: number | undefined,
    error?: ClinicalError
  ) {
    this.metrics.record(fiber, call.operation, this.spanOf(fiber, call), m.attempts, status, error)
  }

  request(call: AnyCall, token: TokenService.AccessToken, timeoutMillis: number): HttpTransport.TransportRequest {
    return new DataRequest(call.url, this.headers.of(token), call.body, this.config.maxResponseBytes, timeoutMillis)
  }

  /** A response read into its JSON, or the core's failure it stands for. */
  read(call: AnyCall, used: TokenService.AccessToken, response: HttpTransport.TransportResponse, now: number) {
    return readJson({
      operation: call.operation,
      method: "POST",
      url: call.url,
      secrets: () => [...call.secrets(), used.token, this.config.applicationId],
      now,
      maxRetryAfterMillis: this.maxRetryAfterMillis
    }, response)
  }

  /** The Effect path from `effect` on: under the call's span when the caller handed one, which it ends when the call does. */
  onEffectPath<A>(fiber: FiberSpan.AnyFiber, call: Call<A>, effect: Effect.Effect<A, ClinicalError>) {
    const span = call.span
    return span === undefined ? effect : Effect.onExit(
      Effect.withParentSpan(effect, span),
      (exit) => Effect.sync(() => FiberSpan.end(fiber, span, exit))
    )
  }

  /** The end of a call whose answer reads: what the call makes of it, recorded (a failure as any other). */
  finished<A>(fiber: FiberSpan.AnyFiber, call: Call<A>, m: Machine): Either.Either<A, ClinicalError> {
    const out = call.finish(
      new Answer(m.status!, m.json, call.secrets, this.config.applicationId, m.token?.token, identity)
    )
    this.record(fiber, call, m, m.status, Either.isLeft(out) ? out.left : undefined)
    return out
  }

  /** The Effect path from an attempt's action (core/call/callRunner). */
  attempt<A>(call: Call<A>, m: Machine, action: Action): Effect.Effect<A, ClinicalError> {
    return this.runner.attempt(call, m, action)
  }

  /** The Effect path from the next action after an event that may retry. */
  decided<A>(call: Call<A>, m: Machine, decide: Decision): Effect.Effect<A, ClinicalError> {
    return this.runner.decided(call, m, decide)
  }

  /** What the runner written once in core does with this line's Effect, spans and metrics. */
  private lineOf(): CallLine<AnyEffect, TokenService.AccessToken, ClinicalError, Clock.Clock, AnyCall, Response> {
    return {
      effects: tokenLine.effects,
      random: tokenLine.random,
      clockWith: (f) => Effect.clockWith((clock) => f(clock.unsafeCurrentTimeMillis())),
      tokens: this.tokens,
      inTurn: this.gate.run,
      send: (call, m) =>
        Effect.mapError(
          HttpSpan.attempt(
            this.request(call, m.token!, m.waitMillis),
            m.attempts - 1,
            this.tracePropagation,
            this.transport.send,
            call.traced
          ),
          (error) => labelled(error, call.operation, call.secrets())
        ),
      read: (call, used, response, now) => this.read(call, used, response, now),
      finished: (call, m) => Effect.withFiberRuntime((fiber) => this.finished(fiber, call, m)),
      failed: (call, m) =>
        Effect.withFiberRuntime((fiber) => {
          const error = m.error!
          this.record(fiber, call, m, "status" in error ? error.status : undefined, error)
          return Effect.fail(error)
        }),
      countRetry: (operation, cause) => Metric.increment(this.metrics.of(operation).retry(cause)),
      countRefused: (by) => Metric.increment(by === "circuit" ? refusedByCircuit : refusedByBudget),
      wrap: this.wrap
    }
  }
}

/** Builds a call function over the given services (with a gate of its own: see {@link forClient}). */
export const make = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service
): AuthorizedPost => {
  const caller = new Caller(config, transport, tokens)
  return <A>(call: Call<A>, fiber?: FiberSpan.AnyFiber) =>
    fiber === undefined
      ? Effect.withFiberRuntime<A, ClinicalError>((current) => caller.start(current, call))
      : caller.start(fiber, call)
}

const perClient = new PerClient<TokenService.Service, AuthorizedPost>()

/** The call function of the client these services make up (see core/call/perClient). */
export const forClient = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service
): AuthorizedPost => perClient.of(tokens, config, transport, () => make(config, transport, tokens))
