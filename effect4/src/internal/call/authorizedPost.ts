/**
 * A data call: POST with the bearer token and the ApplicationId, answered as JSON, made resilient.
 * The decisions are the core's call machine's (core/call/callMachine.ts: attempts, retries with
 * backoff and `Retry-After`, the deadline, a 401/419 refreshed once, load control); this is its
 * runner on Effect 4, performing each action it answers with (the Effect 3 line runs the same
 * machine).
 *
 * This is the hot path of every call, so it is written for cost. A call no one could see the spans
 * of (no tracer installed, no propagation) whose token is cached and whose circuit is closed takes
 * the common path: one callback, with the turn taken, the request dispatched and the answer read in
 * the transport's own callbacks and no Effect run between (see `common`). Anything else, and
 * anything that goes wrong on it, goes on on the Effect path, from exactly the point reached.
 */
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { type Action, CallMachine } from "../../../../core/call/callMachine.js"
import { CallRules, type Durations } from "../../../../core/call/callRules.js"
import { type CallLine, CallRunner, type Decision } from "../../../../core/call/callRunner.js"
import { PerClient } from "../../../../core/call/perClient.js"
import { Answer, Failed, readJson } from "../../../../core/call/response.js"
import type * as Core from "../../../../core/errors.js"
import { dispatchOf } from "../../../../core/transport/dispatchPairs.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import { fromCore } from "../fromCore.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as Telemetry from "../observability/telemetry.js"
import { type AnyEffect, tokenLine } from "../token/tokenLine.js"
import type { Dispatch } from "../transport/undici.js"
import { labelled } from "../transport/wire.js"
import { type AnyCall, type Call, DataRequest } from "./call.js"
import { CallMetrics, refusedByBudget, refusedByCircuit } from "./callMetrics.js"
import { type AnyFiber, asEffect, commonPath, type Machine, type Runner } from "./commonPath.js"
import * as Gate from "./gate.js"

export { type Call, dataHeaders, type Finish, type JsonResponse } from "./call.js"

type Response = HttpTransport.TransportResponse

/** Makes one call: what it makes of the answer, or the typed error it ended in. */
export type AuthorizedPost = <A>(call: Call<A>) => Effect.Effect<A, ClinicalError>

/** How this line reads durations and its clock, for the client's rules. */
const DURATIONS: Durations<Duration.Duration, Clock.Clock> = {
  toMillis: Duration.toMillis,
  format: Duration.format,
  nanos: (clock) => clock.currentTimeNanosUnsafe()
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
  private readonly metrics: CallMetrics
  private readonly dispatch: Dispatch | undefined
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
    private readonly tokens: TokenService.Service,
    context: Context.Context<never>
  ) {
    // The limit's gauge, set as the limit moves, in the services the client was built with.
    super(
      config,
      DURATIONS,
      Gate.make(config.maxConcurrentRequests),
      tokens,
      (permits) => Telemetry.concurrencyLimit.updateUnsafe(permits, context)
    )
    this.metrics = new CallMetrics(config.tracePropagation)
    // Only a transport whose send is the library's own (see core/transport/dispatchPairs).
    this.dispatch = dispatchOf(transport)
    this.runner = new CallRunner(this.lineOf())
  }

  /** Starts a call: on the common path when it can (see `commonPath`), else on the Effect path. */
  call<A>(call: Call<A>): Effect.Effect<A, ClinicalError> {
    return Effect.withFiber((fiber) => {
      const clock = fiber.getRef(Clock.Clock)
      const machine: Machine = new CallMachine<TokenService.AccessToken, ClinicalError, Clock.Clock>(
        this,
        call.operation,
        call.url,
        call.resendable,
        clock
      )
      const action = machine.start(clock.currentTimeMillisUnsafe())
      if (HttpSpan.observed(fiber, this.config.tracePropagation)) {
        const attempt = this.attempt(call, machine, action)
        return call.span === undefined ? attempt : Effect.withSpan(attempt, call.span, {
          attributes: { "clinical.operation": call.operation },
          captureStackTrace: false
        })
      }
      const dispatch = this.dispatch
      return action === "Turn" && dispatch !== undefined && !machine.probing()
        ? commonPath(this, fiber, call, machine, dispatch, clock)
        : this.attempt(call, machine, action)
    })
  }

  request(call: AnyCall, token: TokenService.AccessToken, timeoutMillis: number): HttpTransport.TransportRequest {
    return new DataRequest(call.url, this.headers.of(token), call.body, this.config.maxResponseBytes, timeoutMillis)
  }

  /** A response read into its JSON, or the error it stands for (as the core has it). */
  read(call: AnyCall, used: TokenService.AccessToken, response: HttpTransport.TransportResponse, now: number) {
    return readJson({
      operation: call.operation,
      method: "POST",
      url: call.url,
      secrets: () => [...call.secrets(), Redacted.value(used.token), Redacted.value(this.config.applicationId)],
      now,
      maxRetryAfterMillis: this.maxRetryAfterMillis
    }, response)
  }

  /** The end of a call whose answer reads: what the call makes of it (a failure recorded as any other). */
  finished<A>(fiber: AnyFiber, call: Call<A>, m: Machine): Result.Result<A, ClinicalError> {
    const out = call.finish(
      new Answer(m.status!, m.json, call.secrets, this.config.applicationId, m.token?.token, Redacted.value)
    )
    const error = out instanceof Failed ? fromCore(out.error) : undefined
    const status = error === undefined ? m.status : "status" in error ? error.status : undefined
    this.metrics.record(fiber, call.operation, m.attempts, status, error)
    return error === undefined ? Result.succeed(out as A) : Result.fail(error)
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
      clockWith: (f) => Effect.clockWith((clock) => f(clock.currentTimeMillisUnsafe())),
      tokens: this.tokens,
      inTurn: this.gate.run,
      send: (call, m) =>
        Effect.withFiber((fiber) =>
          Effect.mapError(
            HttpSpan.attempt(
              this.request(call, m.token!, m.waitMillis),
              m.attempts - 1,
              this.config.tracePropagation,
              this.transport.send,
              HttpSpan.observed(fiber, this.config.tracePropagation)
            ),
            (error) => labelled(error, call.operation, call.secrets())
          )
        ),
      read: (call, used, response, now) => this.read(call, used, response, now),
      finished: (call, m) => Effect.withFiber((fiber) => asEffect(this.finished(fiber, call, m))),
      failed: (call, m) =>
        Effect.withFiber((fiber) => {
          const error = m.error!
          this.metrics.record(fiber, call.operation, m.attempts, "status" in error ? error.status : undefined, error)
          return Effect.fail(error)
        }),
      countRetry: (operation, cause) => Metric.update(this.metrics.of(operation).retry(cause), 1),
      countRefused: (by) => Metric.update(by === "circuit" ? refusedByCircuit : refusedByBudget, 1),
      wrap: this.wrap
    }
  }
}

/**
 * Builds a call function over the given services, with a gate and load control of its own;
 * `context`: the services it was built in (where the limit's gauge is kept).
 */
export const make = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service,
  context: Context.Context<never>
): AuthorizedPost => {
  const caller = new Caller(config, transport, tokens, context)
  return (call) => caller.call(call)
}

const perClient = new PerClient<TokenService.Service, AuthorizedPost>()

/** The call function of the client these services make up (see core/call/perClient). */
export const forClient = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service,
  context: Context.Context<never>
): AuthorizedPost => perClient.of(tokens, config, transport, () => make(config, transport, tokens, context))
