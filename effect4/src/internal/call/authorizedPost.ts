/**
 * A data call: POST with the bearer token and the ApplicationId, answered as JSON, made resilient.
 * The rules are the core's, interpreted here with Effect 4 (the Effect 3 line interprets the same):
 *
 * - Every attempt takes the current token, so a retry never carries a stale one.
 * - A 401 or 419 drops the token that was used (only if it is still the cached one), takes a
 *   fresh token and tries again at once; once per call (core/call/callPolicy).
 * - Transport failures, attempt timeouts, 429, 500, 502, 503 and 504 are retried with jittered
 *   exponential backoff, at least as long as any `Retry-After`, up to `maxRetries` times; a call
 *   that is not `resendable` (authenticate) only where its request surely never reached the server.
 * - The whole call has a deadline: a wait that would pass it is not started.
 * - At most `maxConcurrentRequests` data requests are in flight per client (core/call/gate), and
 *   within that the client's load control (core/call/loadControl) sets how many go at once,
 *   refuses calls while its circuit is open (`CircuitOpen`) and bounds retries by its budget.
 *
 * This is the hot path of every call, so it is written for cost. A call no one could see the spans
 * of (no tracer installed, no propagation) whose token is cached and whose circuit is closed takes
 * the common path: one callback, with the turn taken, the request dispatched and the answer read in
 * the transport's own callbacks and no Effect run between (see `common`). Anything else, and
 * anything that goes wrong on it, goes on on the Effect path, from exactly the point reached, so
 * that every rule lives once.
 */
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as CallPolicy from "../../../../core/call/callPolicy.js"
import * as Core from "../../../../core/call/loadControl.js"
import { Failed, readJson } from "../../../../core/call/response.js"
import { retryPolicyOf } from "../../../../core/config/settings.js"
import * as FreshToken from "../../../../core/token/freshToken.js"
import { dispatchOf } from "../../../../core/transport/dispatchPairs.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import { CircuitOpen, type ClinicalError, type HttpError, type Operation, TransportError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import { fromCore } from "../fromCore.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as Telemetry from "../observability/telemetry.js"
import type { Dispatch } from "../transport/undici.js"
import { labelled } from "../transport/wire.js"
import * as Gate from "./gate.js"

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
  /** Every secret the request carried (the PersonUid, the token, the ApplicationId, ...), revealed: to scrub from text built from the body. */
  readonly secrets: () => ReadonlyArray<string>
}

/** What a call makes of an answer that reads: the value its caller gets, or the error the answer stands for. */
export type Finish<A> = (answer: JsonResponse) => A | Failed

/** What a call is. */
export interface Call<A> {
  /** The operation's name, for errors, spans and metrics. */
  readonly operation: Operation
  readonly url: string
  /** The request body; it holds a PersonUid (or a pass code), so it stays secret. */
  readonly body: Redacted.Redacted<string>
  /** Secrets the request carries besides the token and ApplicationId, revealed only to scrub server text. */
  readonly secrets: () => ReadonlyArray<string>
  /**
   * Whether the request may be sent again once it may have reached the server. Reads may; an
   * operation that consumes something (a single-use pass code) or writes may not.
   */
  readonly resendable: boolean
  /** What the call makes of its answer (decoding it, say): its failure is the call's, recorded as any other. */
  readonly finish: Finish<A>
  /**
   * The call's span, made when someone could see it (a tracer installed, or propagation on), with
   * the operation as its `clinical.operation`; without it, the caller made the span it runs under.
   */
  readonly span?: string | undefined
}

/** Makes one call: what it makes of the answer, or the typed error it ended in. */
export type AuthorizedPost = <A>(call: Call<A>) => Effect.Effect<A, ClinicalError>

type AnyCall = Call<unknown>

/** The headers of every data request: JSON, the bearer token and the ApplicationId, both redacted. */
export const dataHeaders = (
  config: ClinicalConfig.Service,
  authorization: Redacted.Redacted<string>
): Readonly<Record<string, HttpTransport.WireValue>> => ({
  "Content-Type": "application/json",
  // No compression: nothing to inflate, so nothing to inflate without bound.
  "Accept-Encoding": "identity",
  Authorization: authorization,
  ApplicationId: config.applicationId
})

/** How a failed exchange ended: sent, unless the request surely never reached the server. */
const failed = (error: HttpError): CallPolicy.Outcome<ClinicalError> => ({
  _tag: "Failed",
  error,
  sent: !(error._tag === "TransportError" && error.requestSent === false)
})

const refusedByCircuit = Metric.withAttributes(Telemetry.refusedByLoadControl, { reason: "circuit-open" })
const refusedByBudget = Metric.withAttributes(Telemetry.refusedByLoadControl, { reason: "retry-budget" })

const nanos = (clock: Clock.Clock): bigint => clock.currentTimeNanosUnsafe()

/** An attempt answered with a response that does not read: the error it stands for. */
const answeredWith = (response: HttpTransport.TransportResponse, read: Failed): CallPolicy.Outcome<ClinicalError> => ({
  _tag: "Answered",
  status: response.status,
  read: { _tag: "Left", left: fromCore(read.error) }
})

/**
 * A data request as the transport gets it: a class rather than an object literal, for the garbage
 * collector's sake (docs/architecture.md, "Objects made per call"). Its body is an Effect
 * `Redacted` made by the caller: the Effect 3 line's lazily made body (core/redaction/secretText)
 * measured 8% more CPU per call here (its per-request `defineProperty` costs more than Effect 4's
 * `Redacted.make`).
 */
class DataRequest implements HttpTransport.TransportRequest {
  readonly method = "POST"
  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, HttpTransport.WireValue>>,
    readonly body: Redacted.Redacted<string>,
    readonly maxResponseBytes: number,
    readonly timeoutMillis: number
  ) {}
}

/**
 * The answer a call ends in: a class rather than an object literal, for the garbage collector's
 * sake (docs/architecture.md, "Objects made per call").
 */
class Answer implements JsonResponse {
  readonly secrets: () => ReadonlyArray<string>
  constructor(
    readonly status: number,
    readonly json: unknown,
    call: AnyCall,
    applicationId: Redacted.Redacted<string>,
    used: TokenService.AccessToken | undefined
  ) {
    this.secrets = () => [
      ...call.secrets(),
      Redacted.value(applicationId),
      ...(used === undefined ? [] : [Redacted.value(used.token)])
    ]
  }
}

/** A call's end as an Effect. */
const asEffect = <A>(out: Result.Result<A, ClinicalError>): Effect.Effect<A, ClinicalError> =>
  Result.isSuccess(out) ? Effect.succeed(out.success) : Effect.fail(out.failure)

/** A fiber, whatever it computes. */
type AnyFiber = Fiber.Fiber<unknown, unknown>

/** The metrics of one operation, tagged once (a metric tagged on every call cost its key's making each time). */
class OperationMetrics {
  readonly attempts: Metric.Metric<number, unknown>
  private readonly failures = new Map<string, Metric.Metric<number, unknown>>()
  private readonly retries = new Map<string, Metric.Metric<number, unknown>>()
  constructor(private readonly operation: Operation) {
    this.attempts = Metric.withAttributes(Telemetry.attemptsPerCall, { operation })
  }
  /** The failures counter of an error's tag (a small fixed set). */
  failure(tag: string): Metric.Metric<number, unknown> {
    let metric = this.failures.get(tag)
    if (metric === undefined) {
      this.failures.set(
        tag,
        metric = Metric.withAttributes(Telemetry.failures, { operation: this.operation, error: tag })
      )
    }
    return metric
  }
  /** The retries counter of a cause (network, timeout, a status: a small set). */
  retry(cause: string): Metric.Metric<number, unknown> {
    let metric = this.retries.get(cause)
    if (metric === undefined) {
      this.retries.set(cause, metric = Metric.withAttributes(Telemetry.retries, { operation: this.operation, cause }))
    }
    return metric
  }
}

/** The calls of one client, one method per step. The public entry is {@link make}. */
class Caller {
  private readonly resendable: CallPolicy.Policy
  private readonly singleUse: CallPolicy.Policy
  private readonly deadlineMillis: number
  private readonly requestTimeoutMillis: number
  private readonly maxRetryAfterMillis: number
  private readonly gate: Gate.Gate
  private readonly load: Core.LoadControl<Clock.Clock>
  // Tagged once per operation name: the names come from definitions in code, a small fixed set.
  private readonly metricsByOperation = new Map<Operation, OperationMetrics>()
  // The headers change with the token only: built once per token, not on every call.
  private headersToken: TokenService.AccessToken | undefined = undefined
  private headers: Readonly<Record<string, HttpTransport.WireValue>> = {}
  private readonly fresh: FreshToken.Reader<TokenService.AccessToken> | undefined
  private readonly dispatch: Dispatch | undefined

  constructor(
    private readonly config: ClinicalConfig.Service,
    private readonly transport: HttpTransport.Service,
    private readonly tokens: TokenService.Service,
    context: Context.Context<never>
  ) {
    const retry = retryPolicyOf(config, Duration.toMillis)
    this.resendable = { ...retry, resendable: true }
    this.singleUse = { ...retry, resendable: false }
    this.deadlineMillis = Duration.toMillis(config.deadline)
    this.requestTimeoutMillis = Duration.toMillis(config.requestTimeout)
    this.maxRetryAfterMillis = Duration.toMillis(config.maxRetryAfter)
    this.gate = Gate.make(config.maxConcurrentRequests)
    this.load = new Core.LoadControl(
      Core.settingsOf(config, Duration.toMillis),
      this.gate,
      // The limit's gauge, set as the limit moves, in the services the client was built with.
      (permits) => Telemetry.concurrencyLimit.updateUnsafe(permits, context),
      nanos
    )
    this.fresh = FreshToken.readerOf<TokenService.AccessToken>(tokens)
    // Only a transport whose send is the library's own (see core/transport/dispatchPairs).
    this.dispatch = dispatchOf(transport)
  }

  /** Starts a call: on the common path when it can (see {@link common}), else on the Effect path. */
  call<A>(call: Call<A>): Effect.Effect<A, ClinicalError> {
    return Effect.withFiber((fiber) => {
      const clock = fiber.getRef(Clock.Clock)
      const now = clock.currentTimeMillisUnsafe()
      const begun = CallPolicy.begin(now, this.deadlineMillis)
      if (HttpSpan.observed(fiber, this.config.tracePropagation)) {
        const attempt = this.attempt(call, begun)
        return call.span === undefined ? attempt : Effect.withSpan(attempt, call.span, {
          attributes: { "clinical.operation": call.operation },
          captureStackTrace: false
        })
      }
      const dispatch = this.dispatch
      const used = dispatch === undefined || !this.load.closed() ? undefined : this.fresh?.(now)
      return used === undefined ? this.attempt(call, begun) : this.common(fiber, call, begun, used, dispatch!, clock)
    })
  }

  /** The call's deadline passed; `unsent` when it passed before the request went (waiting for a turn or a token). */
  private deadlinePassed(call: AnyCall, unsent = false): HttpError {
    return new TransportError({
      operation: call.operation,
      reason: "Deadline",
      ...(unsent ? { requestSent: false } : {}),
      method: "POST",
      url: call.url,
      detail: `the call's deadline of ${Duration.format(this.config.deadline)} passed`
    })
  }

  private request(
    call: AnyCall,
    token: TokenService.AccessToken,
    timeoutMillis: number
  ): HttpTransport.TransportRequest {
    if (token !== this.headersToken) {
      this.headers = dataHeaders(this.config, token.authorization)
      this.headersToken = token
    }
    return new DataRequest(call.url, this.headers, call.body, this.config.maxResponseBytes, timeoutMillis)
  }

  /** A transport's failure as the call's: labelled with the operation, scrubbed of the call's secrets; a timeout that was the deadline says so. */
  private transportFailure(call: AnyCall, byDeadline: boolean, error: TransportError): HttpError {
    if (byDeadline && error.reason === "Timeout") return this.deadlinePassed(call)
    return labelled(error, call.operation, call.secrets())
  }

  // One request with the attempt timeout, cut short by the deadline if that comes first.
  private exchange(call: AnyCall, progress: CallPolicy.Progress, token: TokenService.AccessToken) {
    return Effect.withFiber((fiber) => {
      const budget = CallPolicy.budget(
        progress,
        fiber.getRef(Clock.Clock).currentTimeMillisUnsafe(),
        this.requestTimeoutMillis
      )
      if (budget._tag === "Passed") return Effect.fail(this.deadlinePassed(call, true))
      return Effect.mapError(
        HttpSpan.attempt(
          this.request(call, token, budget.timeoutMillis),
          progress.attempts - 1,
          this.config.tracePropagation,
          this.transport.send,
          HttpSpan.observed(fiber, this.config.tracePropagation)
        ),
        (error) => this.transportFailure(call, budget.byDeadline, error)
      )
    })
  }

  // The token: at once when cached; a wait for a refresh is bounded by the deadline.
  private token(call: AnyCall, progress: CallPolicy.Progress) {
    return Effect.clockWith((clock) =>
      Effect.mapError(
        this.tokens.getWithin(Math.max(0, progress.deadlineAt - clock.currentTimeMillisUnsafe())),
        (error): ClinicalError =>
          error._tag === "TransportError" && error.reason === "Deadline" ? this.deadlinePassed(call, true) : error
      )
    )
  }

  private metricsOf(operation: Operation): OperationMetrics {
    let metrics = this.metricsByOperation.get(operation)
    if (metrics === undefined) this.metricsByOperation.set(operation, metrics = new OperationMetrics(operation))
    return metrics
  }

  /**
   * The call's bookkeeping, in the fiber that runs it and with no Effect of its own: the attempts
   * histogram, the failures counter, and (when someone could see it) the span's attributes.
   */
  private recordIn(
    fiber: AnyFiber,
    call: AnyCall,
    progress: CallPolicy.Progress,
    status: number | undefined,
    error: ClinicalError | undefined
  ): void {
    const metrics = this.metricsOf(call.operation)
    metrics.attempts.updateUnsafe(progress.attempts, fiber.context)
    if (error !== undefined) metrics.failure(error._tag).updateUnsafe(1, fiber.context)
    const span = fiber.cache.span
    if (span?._tag === "Span" && HttpSpan.observed(fiber, this.config.tracePropagation)) {
      span.attribute("clinical.attempts", progress.attempts)
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("clinical.error", error._tag)
    }
  }

  /** The end of a call whose answer reads: what the call makes of it (a failure recorded as any other). */
  private finished<A>(
    fiber: AnyFiber,
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Result.Result<A, ClinicalError> {
    const out = call.finish(new Answer(status, json, call, this.config.applicationId, used))
    const error = out instanceof Failed ? fromCore(out.error) : undefined
    this.recordIn(
      fiber,
      call,
      progress,
      error === undefined ? status : "status" in error ? error.status : undefined,
      error
    )
    return error === undefined ? Result.succeed(out as A) : Result.fail(error)
  }

  /** The end of a call whose answer reads: what the call makes of it, recorded (a failure as any other). */
  private succeed<A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Effect.Effect<A, ClinicalError> {
    return Effect.withFiber((fiber) => asEffect(this.finished(fiber, call, progress, status, json, used)))
  }

  private fail(
    call: AnyCall,
    progress: CallPolicy.Progress,
    error: ClinicalError
  ): Effect.Effect<never, ClinicalError> {
    return Effect.withFiber((fiber) => {
      this.recordIn(fiber, call, progress, "status" in error ? error.status : undefined, error)
      return Effect.fail(error)
    })
  }

  // Acts on the pure step for how the attempt ended.
  private proceed<A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    outcome: CallPolicy.Outcome<ClinicalError>,
    used: TokenService.AccessToken | undefined
  ): Effect.Effect<A, ClinicalError> {
    return Effect.flatMap(Random.next, (random) =>
      Effect.clockWith((clock) => {
        const policy = call.resendable ? this.resendable : this.singleUse
        const step = CallPolicy.next(policy, progress, outcome, clock.currentTimeMillisUnsafe(), random)
        switch (step._tag) {
          case "Done":
            return this.succeed(call, step.progress, step.status, step.json, used)
          case "Fail":
            return this.fail(call, step.progress, step.error)
          case "RefreshToken":
            return Effect.logDebug("token rejected; refreshing it and retrying once").pipe(
              Effect.annotateLogs({
                status: outcome._tag === "Answered" ? outcome.status : 0,
                generation: used?.generation
              }),
              Effect.andThen(used === undefined ? Effect.void : this.tokens.invalidate(used)),
              Effect.andThen(Effect.suspend(() => this.attempt(call, step.progress)))
            )
          case "Retry": {
            const error = step.error
            // A retry after the token could not be had as the service down is not paid from the
            // budget: the breaker bounds it (LoadControl.tokenRetryUnpaid).
            if (
              !(used === undefined && this.load.tokenRetryUnpaid(error)) &&
              !this.load.retryAllowed(clock.currentTimeMillisUnsafe())
            ) {
              return Metric.update(refusedByBudget, 1).pipe(
                Effect.andThen(Effect.logDebug("retry not sent: the retry budget is spent")),
                Effect.andThen(this.fail(call, progress, error))
              )
            }
            return Metric.update(this.metricsOf(call.operation).retry(step.cause), 1).pipe(
              Effect.andThen(
                Effect.logDebug("retrying").pipe(
                  Effect.annotateLogs({
                    cause: step.cause,
                    retry: step.progress.retried,
                    delayMillis: step.delayMillis
                  })
                )
              ),
              Effect.andThen(Effect.sleep(Duration.millis(step.delayMillis))),
              Effect.andThen(Effect.suspend(() => this.attempt(call, step.progress)))
            )
          }
        }
      }))
  }

  /** An answer read into its JSON: the call ends, or goes on as the error it stands for says. */
  private answered<A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    used: TokenService.AccessToken,
    response: HttpTransport.TransportResponse
  ): Effect.Effect<A, ClinicalError> {
    return Effect.clockWith((clock) => {
      const read = this.read(call, used, response, clock.currentTimeMillisUnsafe())
      return read instanceof Failed
        ? this.proceed(call, progress, answeredWith(response, read), used)
        : this.succeed(call, progress, response.status, read, used)
    })
  }

  /** A response read into its JSON, or the error it stands for. */
  private read(call: AnyCall, used: TokenService.AccessToken, response: HttpTransport.TransportResponse, now: number) {
    return readJson({
      operation: call.operation,
      method: "POST",
      url: call.url,
      secrets: () => [...call.secrets(), Redacted.value(used.token), Redacted.value(this.config.applicationId)],
      now,
      maxRetryAfterMillis: this.maxRetryAfterMillis
    }, response)
  }

  /**
   * One attempt. A turn of the gate is held only while the request is in flight; the wait for one
   * needs no timer of its own to respect the deadline (turns go in arrival order, and every call
   * ahead holds its turn no longer than its own, earlier, deadline).
   */
  private attempt<A>(call: Call<A>, before: CallPolicy.Progress): Effect.Effect<A, ClinicalError> {
    return Effect.clockWith((clock) => {
      const waitMillis = this.load.admit(clock)
      if (waitMillis !== undefined) return this.circuitOpen(call, before, this.refusal(call, waitMillis))
      const progress = CallPolicy.attempted(before)
      const sentAt = this.load.probeSince()
      const attempt = Effect.matchEffect(this.token(call, progress), {
        // Nothing of this call was sent yet: a token failure may always be retried.
        onFailure: (error) => {
          this.load.endedUnsent(sentAt, error, clock)
          return this.proceed(call, progress, { _tag: "Failed", error, sent: false }, undefined)
        },
        onSuccess: (taken) => {
          let used = taken
          const exchange = Effect.suspend((): Effect.Effect<HttpTransport.TransportResponse, HttpError> => {
            // Admitted while closed, its turn coming once the circuit opened: asked again.
            if (sentAt === Number.NEGATIVE_INFINITY && !this.load.closed()) {
              const waitMillis = this.load.admit(clock)
              if (waitMillis !== undefined) return Effect.fail(this.refusal(call, waitMillis))
            }
            // The cache's fresh token, which may have replaced `taken` while the call waited for
            // its turn (a wait the concurrency limit can make long): else a needless 401.
            used = this.fresh?.(clock.currentTimeMillisUnsafe()) ?? taken
            return this.measured(this.exchange(call, progress, used), progress, clock)
          })
          return Effect.matchEffect(this.gate.run(exchange), {
            onFailure: (error) =>
              error._tag === "CircuitOpen"
                ? this.circuitOpen(call, before, error)
                : this.proceed(call, progress, failed(error), used),
            onSuccess: (response) => this.answered(call, progress, used, response)
          })
        }
      })
      // Only a call admitted while the circuit was not closed can be its probe (see `sentAt`).
      return sentAt === Number.NEGATIVE_INFINITY
        ? attempt
        : Effect.onInterrupt(attempt, () => Effect.sync(() => this.load.interrupted(sentAt, clock)))
    })
  }

  /** The open circuit's refusal of a call: nothing is sent, the caller learns when the service is probed. */
  private refusal(call: AnyCall, waitMillis: number): CircuitOpen {
    return new CircuitOpen({ operation: call.operation, retryAfterMillis: waitMillis })
  }

  /** A call the open circuit refused: counted, recorded, failed with the refusal. */
  private circuitOpen(call: AnyCall, progress: CallPolicy.Progress, refused: CircuitOpen) {
    return Effect.andThen(Metric.update(refusedByCircuit, 1), this.fail(call, progress, refused))
  }

  /** An exchange whose end the load control is told of, in its turn (so that the turn counts as in flight). */
  private measured(
    exchange: Effect.Effect<HttpTransport.TransportResponse, HttpError>,
    progress: CallPolicy.Progress,
    clock: Clock.Clock
  ): Effect.Effect<HttpTransport.TransportResponse, HttpError> {
    return Effect.suspend(() => {
      const load = this.load
      const number = load.sending(progress.attempts === 1, clock.currentTimeMillisUnsafe())
      const sentMillis = load.roundTripClock(clock)
      const sentAt = load.sentAt(clock)
      const inFlight = load.inFlight()
      return Effect.onExit(exchange, (exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) {
            const status = exit.value.status
            load.ended(
              number,
              sentAt,
              Core.signalOfStatus(status),
              clock,
              Core.latencySample(status, sentMillis),
              inFlight
            )
          } else {
            const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
            if (error !== undefined) load.ended(number, sentAt, Core.signalOfError(error.error), clock)
          }
        }))
    })
  }

  /**
   * The call's common path, with no fiber suspended but for the wait on the socket: a fresh token
   * read without an Effect, a turn taken (or waited for) in a callback, the request dispatched and
   * its answer read in the transport's own callback. Whatever is not the common case (the circuit
   * opened while the call waited, the deadline passed, a failure, an answer that does not read)
   * goes on on the Effect path from exactly the point reached (`proceed` with this attempt's
   * progress and outcome). A callback that throws (a caller's `finish`, say) ends the call as a
   * defect, as on the Effect path, its turn given back.
   */
  private common<A>(
    fiber: AnyFiber,
    call: Call<A>,
    before: CallPolicy.Progress,
    used: TokenService.AccessToken,
    send: Dispatch,
    clock: Clock.Clock
  ): Effect.Effect<A, ClinicalError> {
    const gate = this.gate
    const load = this.load
    const progress = CallPolicy.attempted(before)
    return Effect.callback<A, ClinicalError>((resume) => {
      let holding = false
      // Whether the turn came later than asked for: then the token is read again (it may have been refreshed meanwhile).
      let waited = false
      let token = used
      // The request in flight, and how to call it off (variables, no object per call).
      let cancel: (() => void) | undefined
      let request: HttpTransport.TransportRequest | undefined
      let startedNanos = BigInt(0)
      const leave = () => {
        if (holding) {
          holding = false
          gate.leave()
        }
      }
      const withdraw = gate.take(() => {
        holding = true
        try {
          if (!load.closed()) {
            // The circuit opened while this call waited: admitted (or refused) on the Effect path.
            leave()
            return resume(this.attempt(call, before))
          }
          const now = clock.currentTimeMillisUnsafe()
          if (waited) token = this.fresh?.(now) ?? token
          const budget = CallPolicy.budget(progress, now, this.requestTimeoutMillis)
          if (budget._tag === "Passed") {
            leave()
            return resume(this.fail(call, progress, this.deadlinePassed(call, true)))
          }
          const sent = request = this.request(call, token, budget.timeoutMillis)
          const number = load.sending(true, now)
          const sentMillis = load.roundTripClock(clock)
          const sentAt = load.sentAt(clock)
          const inFlight = load.inFlight()
          startedNanos = clock.currentTimeNanosUnsafe()
          const calledOff = send(sent, (outcome) => {
            // Once only, and never after the call was called off (a transport of the application's
            // own may call back late or twice).
            if (!holding) return
            cancel = undefined
            try {
              HttpSpan.recordUnsafe(sent, outcome, clock.currentTimeNanosUnsafe() - startedNanos, fiber.context)
              if (Result.isFailure(outcome)) {
                const failure = this.transportFailure(call, budget.byDeadline, outcome.failure)
                // The load control learns of the end while the turn is held: it counts as in flight.
                load.ended(number, sentAt, Core.signalOfError(failure), clock)
                leave()
                return resume(this.proceed(call, progress, failed(failure), token))
              }
              const response = outcome.success
              load.ended(
                number,
                sentAt,
                Core.signalOfStatus(response.status),
                clock,
                Core.latencySample(response.status, sentMillis),
                inFlight
              )
              leave()
              const read = this.read(call, token, response, clock.currentTimeMillisUnsafe())
              resume(
                read instanceof Failed
                  ? this.proceed(call, progress, answeredWith(response, read), token)
                  : asEffect(this.finished(fiber, call, progress, response.status, read, token))
              )
            } catch (defect) {
              leave()
              resume(Effect.die(defect))
            }
          })
          // (Answered already, synchronously: nothing is left to call off.)
          if (holding) cancel = calledOff
        } catch (defect) {
          leave()
          resume(Effect.die(defect))
        }
      })
      waited = true
      // Interrupted: out of the queue, or the request aborted on the socket and the turn given back.
      return Effect.sync(() => {
        if (withdraw() && holding) {
          // The request aborted before its turn goes on: at most the bound is ever out at once.
          const calledOff = cancel
          cancel = undefined
          if (calledOff !== undefined) {
            holding = false
            calledOff()
            HttpSpan.recordUnsafe(request!, "interrupted", clock.currentTimeNanosUnsafe() - startedNanos, fiber.context)
            gate.leave()
          } else {
            leave()
          }
        }
      })
    })
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

/** The call function of each client, keyed by its token cache: every service of a client shares one gate. */
const perClient = new WeakMap<
  TokenService.Service,
  { readonly config: ClinicalConfig.Service; readonly transport: HttpTransport.Service; readonly post: AuthorizedPost }
>()

/**
 * The call function of the client these services make up: built once per token cache, so that
 * `maxConcurrentRequests` bounds the requests of all the client's operations together.
 */
export const forClient = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service,
  context: Context.Context<never>
): AuthorizedPost => {
  const known = perClient.get(tokens)
  if (known !== undefined && known.config === config && known.transport === transport) return known.post
  const post = make(config, transport, tokens, context)
  perClient.set(tokens, { config, transport, post })
  return post
}
