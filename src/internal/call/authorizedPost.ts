/**
 * A data call: POST with the bearer token and the ApplicationId, answered as JSON, made resilient.
 *
 * - Every attempt takes the current token, so a retry never carries a stale one.
 * - A 401 or 419 drops the token that was used (only if it is still the cached one), takes a
 *   fresh token and tries again at once; once per call. A second 401/419 is the caller's error.
 * - Transport failures, attempt timeouts, 429, 500, 502, 503 and 504 are retried with jittered
 *   exponential backoff, at least as long as any `Retry-After`, up to `maxRetries` times; a call
 *   that is not `resendable` (authenticate) only where its request surely never reached the server.
 * - The whole call has a deadline. A wait that would pass it is not started: the call fails at
 *   once with the error that asked for it (carrying its `Retry-After`).
 * - At most `maxConcurrentRequests` data requests are in flight per client; others wait for a turn.
 *   Within that, the client's load control (`loadControl`) sets how many go at once, refuses calls
 *   while its circuit is open (`CircuitOpen`), and bounds retries by its budget.
 *
 * This is the hot path of every call, so it is written for cost: no timer of its own when the
 * token is cached and a permit is free (the transport's own timeout, bounded by the deadline,
 * does the work), metrics tagged once, secrets gathered only when an error needs them.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import * as Random from "effect/Random"
import type * as Redacted from "effect/Redacted"
import type * as Tracer from "effect/Tracer"
import * as CallPolicy from "../../../core/call/callPolicy.js"
import * as FreshToken from "../../../core/token/freshToken.js"
import { dispatchOf } from "../../../core/transport/dispatchPairs.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import { CircuitOpen, type ClinicalError, type HttpError, type Operation, TransportError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import * as FiberSpan from "../observability/fiberSpan.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as MetricUpdater from "../observability/metricUpdater.js"
import * as Telemetry from "../observability/telemetry.js"
import { labelled } from "./attempt.js"
import { callback } from "./callback.js"
import * as Gate from "./gate.js"
import {
  latencySample,
  LoadControl,
  roundTripClock,
  settingsOf,
  type Signal,
  signalOfError,
  signalOfStatus
} from "./loadControl.js"
import { readJson } from "./response.js"
import { fromConfig } from "./retrySettings.js"
import { DataRequest, type SecretText } from "./secretText.js"

/*
 * The objects made on every call are class instances, not object literals. V8 "pretenures" an
 * object literal whose objects it sees surviving a scavenge (it allocates them in the old
 * generation from then on), and an object there keeps whatever young objects it points to alive
 * until the next full collection, which pretenures their literals in turn: measured on the
 * common path, the request, the attempt, the answer and the call were all pretenured, the parsed
 * answer promoted with them, and garbage collection took half of the call's CPU. A class
 * instance has no allocation site to pretenure (see docs/architecture.md).
 */

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
  /** Every secret the request carried (the PersonUid, the token, the ApplicationId, ...): to scrub from text built from the body. */
  readonly secrets: () => ReadonlyArray<Redacted.Redacted<string>>
}

/** What a call makes of an answer that reads: the value its caller gets, or the error the answer stands for. */
export type Finish<A> = (answer: JsonResponse) => Either.Either<A, ClinicalError>

/** What a call is. */
export class Call<A> {
  /**
   * @param operation the operation's name, for errors, spans and metrics
   * @param url where the request goes
   * @param body the request body; it holds a PersonUid (or a pass code), so it stays secret
   * @param secrets secrets the request carries besides the token and ApplicationId, to scrub from
   *   server text (asked for only then)
   * @param resendable whether the request may be sent again once it may have reached the server.
   *   Reads may. An operation that consumes something (a single-use pass code) or writes may not:
   *   it is sent again only where the server surely did not act (no connection was made; a
   *   401/419 refused the token).
   * @param finish what the call makes of its answer (decoding it, say), as part of the call: its
   *   failure is the call's, recorded as any other
   * @param span the call's span, when the caller made it without making it current (see
   *   `fiberSpan`): the attempts' spans and the call's attributes go there, the Effect path runs
   *   under it, and the call ends it (the caller ends it only when the call never starts)
   * @param traced false when no one could see the call's spans (no tracer installed: see
   *   `FiberSpan.observed`): then the call has no span, and its attempts make none
   */
  constructor(
    readonly operation: Operation,
    readonly url: string,
    readonly body: SecretText,
    readonly secrets: () => ReadonlyArray<Redacted.Redacted<string>>,
    readonly resendable: boolean,
    readonly finish: Finish<A>,
    readonly span?: Tracer.Span | undefined,
    readonly traced: boolean = true
  ) {}
}

/** A call, whatever it makes of its answer. */
type AnyCall = Call<unknown>

/** The answer a call ends in (see {@link Call} on why a class). */
class Answer implements JsonResponse {
  readonly secrets: () => ReadonlyArray<Redacted.Redacted<string>>
  constructor(
    readonly status: number,
    readonly json: unknown,
    call: AnyCall,
    applicationId: Redacted.Redacted<string>,
    used: TokenService.AccessToken | undefined
  ) {
    this.secrets = () => [...call.secrets(), applicationId, ...(used === undefined ? [] : [used.token])]
  }
}

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

/**
 * Makes one call and returns what it makes of the answer, or the typed error it ended in. A caller
 * that already holds the fiber that will run the call (and hands the call its span) may pass it,
 * saving the step that would look it up.
 */
export type AuthorizedPost = <A>(call: Call<A>, fiber?: FiberSpan.AnyFiber) => Effect.Effect<A, ClinicalError>

/** Tagged metrics of one operation, built once rather than on every call. */
const operationMetrics = (operation: Operation) => {
  const retries = Metric.tagged(Telemetry.retries, "operation", operation)
  const failures = Metric.tagged(Telemetry.failures, "operation", operation)
  const byCause = new Map<string, Metric.Metric.Counter<number>>()
  const byTag = new Map<string, Metric.Metric.Counter<number>>()
  const memo = (
    cache: Map<string, Metric.Metric.Counter<number>>,
    base: Metric.Metric.Counter<number>,
    key: string,
    value: string
  ) => {
    let metric = cache.get(value)
    if (metric === undefined) cache.set(value, metric = Metric.tagged(base, key, value))
    return metric
  }
  return {
    attempts: MetricUpdater.updater(
      MetricKey.taggedWithLabels(Telemetry.attemptsPerCallKey, [MetricLabel.make("operation", operation)])
    ),
    retry: (cause: string) => memo(byCause, retries, "cause", cause),
    failure: (tag: string) => memo(byTag, failures, "error", tag)
  }
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
  tokens: TokenService.Service
): AuthorizedPost => {
  const known = perClient.get(tokens)
  if (known !== undefined && known.config === config && known.transport === transport) return known.post
  const post = make(config, transport, tokens)
  perClient.set(tokens, { config, transport, post })
  return post
}

/** How a failed exchange ended: sent, unless the request surely never reached the server. */
const failed = (error: HttpError): CallPolicy.Outcome<ClinicalError> => ({
  _tag: "Failed",
  error,
  sent: !(error._tag === "TransportError" && error.requestSent === false)
})

const refusedByCircuit = Metric.tagged(Telemetry.refusedByLoadControl, "reason", "circuit-open")
const refusedByBudget = Metric.tagged(Telemetry.refusedByLoadControl, "reason", "retry-budget")

/** The open circuit's refusal of a call: nothing is sent, the caller learns when the service is probed. */
const refusal = (call: AnyCall, waitMillis: number): CircuitOpen =>
  new CircuitOpen({ operation: call.operation, retryAfterMillis: waitMillis })

/**
 * The calls of one client, one method per step (a class rather than closures over shared state:
 * V8 runs its methods as fast, and each step has a name). The public entry is {@link make}.
 */
class Caller {
  private readonly resendable: CallPolicy.Policy
  private readonly singleUse: CallPolicy.Policy
  private readonly deadlineMillis: number
  private readonly requestTimeoutMillis: number
  private readonly maxRetryAfterMillis: number
  private readonly gate: Gate.Gate
  private readonly load: LoadControl
  // Tagged once per operation name: the names come from definitions in code, a small fixed set.
  private readonly metricsByOperation = new Map<Operation, ReturnType<typeof operationMetrics>>()
  // The headers change with the token only: built once per token, not on every call.
  private headersToken: TokenService.AccessToken | undefined = undefined
  private headers: Readonly<Record<string, HttpTransport.WireValue>> = {}
  private readonly fresh: ReturnType<typeof FreshToken.readerOf<TokenService.AccessToken>>
  private readonly dispatch: HttpTransport.Service["dispatch"]

  constructor(
    private readonly config: ClinicalConfig.Service,
    private readonly transport: HttpTransport.Service,
    private readonly tokens: TokenService.Service
  ) {
    const retry = fromConfig(config)
    this.resendable = { ...retry, resendable: true }
    this.singleUse = { ...retry, resendable: false }
    this.deadlineMillis = Duration.toMillis(config.deadline)
    this.requestTimeoutMillis = Duration.toMillis(config.requestTimeout)
    this.maxRetryAfterMillis = Duration.toMillis(config.maxRetryAfter)
    this.gate = Gate.make(config.maxConcurrentRequests)
    this.load = new LoadControl(
      settingsOf(config),
      this.gate,
      (permits) => Telemetry.concurrencyLimit.unsafeUpdate(permits, [])
    )
    this.fresh = FreshToken.readerOf<TokenService.AccessToken>(tokens)
    // Only a transport whose send is the library's own (see core/transport/dispatchPairs).
    this.dispatch = dispatchOf(transport)
  }

  /** Starts a call on the given fiber: on the common path when it can (see {@link common}), else on the Effect path. */
  start<A>(fiber: FiberSpan.AnyFiber, call: Call<A>): Effect.Effect<A, ClinicalError> {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const now = clock.unsafeCurrentTimeMillis()
    const begun = CallPolicy.begin(now, this.deadlineMillis)
    const dispatch = this.dispatch
    const used = dispatch === undefined || !this.load.closed() ||
        (call.traced && !FiberSpan.canMake(fiber, this.spanOf(fiber, call)))
      ? undefined
      : this.fresh?.(now)
    return used === undefined
      ? this.onEffectPath(fiber, call, this.attempt(call, begun))
      : this.common(fiber, call, begun, used, dispatch!, clock)
  }

  private metricsOf(operation: Operation) {
    let metrics = this.metricsByOperation.get(operation)
    if (metrics === undefined) this.metricsByOperation.set(operation, metrics = operationMetrics(operation))
    return metrics
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

  /** A transport's failure as the call's: a timeout that was really the deadline says so. */
  private transportFailure(call: AnyCall, byDeadline: boolean, error: TransportError): HttpError {
    return byDeadline && error.reason === "Timeout"
      ? this.deadlinePassed(call)
      : labelled(error, call.operation, call.secrets())
  }

  // One request with the attempt timeout, cut short by the deadline if that comes first.
  private exchange(call: AnyCall, progress: CallPolicy.Progress, token: TokenService.AccessToken) {
    return Effect.clockWith((clock) => {
      const budget = CallPolicy.budget(progress, clock.unsafeCurrentTimeMillis(), this.requestTimeoutMillis)
      if (budget._tag === "Passed") return Effect.fail(this.deadlinePassed(call, true))
      return Effect.mapError(
        HttpSpan.attempt(
          this.request(call, token, budget.timeoutMillis),
          progress.attempts - 1,
          this.config.tracePropagation,
          this.transport.send,
          call.traced
        ),
        (error) => this.transportFailure(call, budget.byDeadline, error)
      )
    })
  }

  // The token: at once when cached; a wait for a refresh is bounded by the deadline.
  private token(call: AnyCall, progress: CallPolicy.Progress) {
    return Effect.clockWith((clock) =>
      Effect.mapError(
        this.tokens.getWithin(Math.max(0, progress.deadlineAt - clock.unsafeCurrentTimeMillis())),
        (error): ClinicalError =>
          error._tag === "TransportError" && error.reason === "Deadline" ? this.deadlinePassed(call, true) : error
      )
    )
  }

  // The call's bookkeeping in one step: attempts histogram, failures counter, span attributes.
  // Metrics are updated with the fiber's metric tags, as `Metric.update` would.
  private recordIn(
    fiber: FiberSpan.AnyFiber,
    call: AnyCall,
    progress: CallPolicy.Progress,
    status: number | undefined,
    error: ClinicalError | undefined
  ): void {
    const tags = fiber.getFiberRef(FiberRef.currentMetricLabels)
    const m = this.metricsOf(call.operation)
    m.attempts(progress.attempts, tags)
    if (error !== undefined) m.failure(error._tag).unsafeUpdate(1, tags)
    const span = this.spanOf(fiber, call)
    if (span !== undefined && span._tag === "Span") {
      span.attribute("clinical.attempts", progress.attempts)
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("clinical.error", error._tag)
    }
  }

  /** Where the call's attempts and attributes go: its own span, else the current one (`Effect.withSpan`'s). */
  private spanOf(fiber: FiberSpan.AnyFiber, call: AnyCall): Tracer.AnySpan | undefined {
    return call.traced ? call.span ?? fiber.currentSpan : undefined
  }

  /** The end of a call whose answer reads: what the call makes of it, recorded (a failure as any other). */
  private finished<A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Either.Either<A, ClinicalError> {
    const out = call.finish(new Answer(status, json, call, this.config.applicationId, used))
    this.recordIn(fiber, call, progress, status, Either.isLeft(out) ? out.left : undefined)
    return out
  }

  private succeed<A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Effect.Effect<A, ClinicalError> {
    return Effect.withFiberRuntime((fiber) => this.finished(fiber, call, progress, status, json, used))
  }

  private fail(call: AnyCall, progress: CallPolicy.Progress, error: ClinicalError) {
    return Effect.zipRight(
      Effect.withFiberRuntime<void>((fiber) => {
        this.recordIn(fiber, call, progress, "status" in error ? error.status : undefined, error)
        return Effect.void
      }),
      Effect.fail(error)
    )
  }

  /**
   * The Effect path of a call from `effect` on: under the call's span when the caller handed one
   * (its children, its logs), which it ends when the call does.
   */
  private onEffectPath<A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    effect: Effect.Effect<A, ClinicalError>
  ): Effect.Effect<A, ClinicalError> {
    const span = call.span
    return span === undefined ? effect : Effect.onExit(
      Effect.withParentSpan(effect, span),
      (exit) => Effect.sync(() => FiberSpan.end(fiber, span, exit))
    )
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
        const step = CallPolicy.next(policy, progress, outcome, clock.unsafeCurrentTimeMillis(), random)
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
              Effect.zipRight(used === undefined ? Effect.void : this.tokens.invalidate(used)),
              Effect.zipRight(Effect.suspend(() => this.attempt(call, step.progress)))
            )
          case "Retry":
            // A retry after the token could not be had as the service down is not paid from the
            // budget: the breaker bounds it (LoadControl.tokenRetryUnpaid).
            if (
              !(used === undefined && this.load.tokenRetryUnpaid(step.error)) &&
              !this.load.retryAllowed(clock.unsafeCurrentTimeMillis())
            ) {
              return this.overBudget(call, progress, step.error)
            }
            return Metric.increment(this.metricsOf(call.operation).retry(step.cause)).pipe(
              Effect.zipRight(
                Effect.logDebug("retrying").pipe(
                  Effect.annotateLogs({
                    cause: step.cause,
                    retry: step.progress.retried,
                    delayMillis: step.delayMillis
                  })
                )
              ),
              Effect.zipRight(Effect.sleep(Duration.millis(step.delayMillis))),
              Effect.zipRight(Effect.suspend(() => this.attempt(call, step.progress)))
            )
        }
      }))
  }

  /** A retry the budget cannot pay for: the call fails at once with the error that asked for it. */
  private overBudget(call: AnyCall, progress: CallPolicy.Progress, error: ClinicalError) {
    return Metric.increment(refusedByBudget).pipe(
      Effect.zipRight(Effect.logDebug("retry not sent: the retry budget is spent")),
      Effect.zipRight(this.fail(call, progress, error))
    )
  }

  /** A response read into its JSON, or the error it stands for. */
  private readAnswer(
    call: AnyCall,
    used: TokenService.AccessToken,
    response: HttpTransport.TransportResponse,
    now: number
  ) {
    return readJson({
      operation: call.operation,
      method: "POST",
      url: call.url,
      secrets: () => [...call.secrets(), used.token, this.config.applicationId],
      now,
      maxRetryAfterMillis: this.maxRetryAfterMillis
    }, response)
  }

  private answered<A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    used: TokenService.AccessToken,
    response: HttpTransport.TransportResponse
  ): Effect.Effect<A, ClinicalError> {
    return Effect.clockWith((clock) => {
      const read = this.readAnswer(call, used, response, clock.unsafeCurrentTimeMillis())
      // The common case needs no step: a body that reads is the answer.
      return read._tag === "Right"
        ? this.succeed(call, progress, response.status, read.right, used)
        : this.proceed(call, progress, { _tag: "Answered", status: response.status, read }, used)
    })
  }

  /**
   * One attempt on the Effect path. A turn of the gate is held only while the request is in
   * flight. The wait for one needs no timer of its own to respect the deadline: turns are given in
   * arrival order, so every call ahead started earlier, has an earlier deadline, and holds its turn
   * no longer than that (its request's timeout is cut to it). A turn that comes too late fails at
   * once in `exchange`.
   */
  private attempt<A>(call: Call<A>, before: CallPolicy.Progress): Effect.Effect<A, ClinicalError> {
    return Effect.clockWith((clock) => {
      const waitMillis = this.load.admit(clock)
      if (waitMillis !== undefined) return this.circuitOpen(call, before, refusal(call, waitMillis))
      const progress = CallPolicy.attempted(before)
      const sentAt = this.load.probeSince()
      const attempt = Effect.matchEffect(this.token(call, progress), {
        // Nothing of this call was sent yet: a token failure may always be retried.
        onFailure: (error) => {
          this.load.endedUnsent(sentAt, error, clock)
          return this.proceed(call, progress, { _tag: "Failed", error, sent: false }, undefined)
        },
        onSuccess: (taken) =>
          Effect.suspend(() => {
            let used = taken
            const exchange = Effect.suspend((): Effect.Effect<HttpTransport.TransportResponse, HttpError> => {
              // Admitted while closed, its turn coming once the circuit opened: asked again.
              if (sentAt === Number.NEGATIVE_INFINITY && !this.load.closed()) {
                const waitMillis = this.load.admit(clock)
                if (waitMillis !== undefined) return Effect.fail(refusal(call, waitMillis))
              }
              used = this.latest(taken, clock)
              return this.measured(this.exchange(call, progress, used), progress, clock)
            })
            return Effect.matchEffect(this.gate.run(exchange), {
              onFailure: (error) =>
                error._tag === "CircuitOpen"
                  ? this.circuitOpen(call, before, error)
                  : this.proceed(call, progress, failed(error), used),
              onSuccess: (response) => this.answered(call, progress, used, response)
            })
          })
      })
      // Only a call admitted while the circuit was not closed can be its probe (see `sentAt`).
      return sentAt === Number.NEGATIVE_INFINITY
        ? attempt
        : Effect.onInterrupt(attempt, () => Effect.sync(() => this.load.interrupted(sentAt, clock)))
    })
  }

  /**
   * The token to send once a turn is had: the cache's fresh one, which may have replaced `taken`
   * while the call waited (a wait the concurrency limit can make long), else `taken`.
   */
  private latest(taken: TokenService.AccessToken, clock: Clock.Clock): TokenService.AccessToken {
    return this.fresh?.(clock.unsafeCurrentTimeMillis()) ?? taken
  }

  /** A call the open circuit refused: counted, recorded, failed with the refusal. */
  private circuitOpen(call: AnyCall, progress: CallPolicy.Progress, refused: CircuitOpen) {
    return Effect.zipRight(Metric.increment(refusedByCircuit), this.fail(call, progress, refused))
  }

  /** An exchange whose end the load control is told of, in its turn (so that the turn counts as in flight). */
  private measured(
    exchange: Effect.Effect<HttpTransport.TransportResponse, HttpError>,
    progress: CallPolicy.Progress,
    clock: Clock.Clock
  ): Effect.Effect<HttpTransport.TransportResponse, HttpError> {
    return Effect.suspend(() => {
      const number = this.load.sending(progress.attempts === 1, clock.unsafeCurrentTimeMillis())
      const sentMillis = roundTripClock(clock)
      const sentAt = this.load.sentAt(clock)
      const inFlight = this.load.inFlight()
      const told = (signal: Signal, sample?: number) =>
        Effect.sync(() => this.load.ended(number, sentAt, signal, clock, sample, inFlight))
      return Effect.onExit(exchange, (exit) =>
        Exit.isSuccess(exit)
          ? told(signalOfStatus(exit.value.status), latencySample(exit.value.status, sentMillis))
          : Cause.isFailType(exit.cause)
          ? told(signalOfError(exit.cause.error))
          : Effect.void)
    })
  }

  /**
   * The end of a common-path call whose callback threw (a caller's Schema, a tracer's span): it
   * dies with the thrown value, as on the Effect path, rather than the throw going up into the gate
   * or the transport and the call never ending. Its turn is given back by the caller.
   */
  private died<A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    resume: (effect: Effect.Effect<A, ClinicalError>) => void,
    defect: unknown
  ): void {
    try {
      if (call.span !== undefined) FiberSpan.end(fiber, call.span, Exit.die(defect))
    } catch {
      // The tracer threw again: the call ends all the same.
    }
    resume(Effect.die(defect))
  }

  /**
   * The call's common path, with no fiber suspended but for the wait on the socket: a fresh token
   * read without an Effect, a turn taken (or waited for) in a callback, the request dispatched and
   * its answer read in the transport's own callback. Whatever is not the common case (no fresh
   * token, a failure, an answer that does not read) continues on the Effect path from exactly the
   * point reached (`proceed` with this attempt's progress and outcome), so that every rule lives
   * once. Only a transport that offers `dispatch` has this path.
   */
  private common<A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    before: CallPolicy.Progress,
    used: TokenService.AccessToken,
    send: NonNullable<HttpTransport.Service["dispatch"]>,
    clock: Clock.Clock
  ): Effect.Effect<A, ClinicalError> {
    const gate = this.gate
    const progress = CallPolicy.attempted(before)
    return callback<A, ClinicalError>((resume) => {
      let holding = false
      // Whether the turn came later than asked for: then the token is read again (see `latest`).
      let waited = false
      let token = used
      // The request in flight: its attempt, and how to call it off (two variables, no object per call).
      let attempt: HttpSpan.Attempt | undefined
      let cancel: (() => void) | undefined
      // Anything but the answer goes on on the Effect path, from this attempt.
      const continueFrom = (outcome: CallPolicy.Outcome<ClinicalError>) =>
        resume(this.onEffectPath(fiber, call, this.proceed(call, progress, outcome, token)))
      const withdraw = gate.take(() => {
        holding = true
        try {
          if (!this.load.closed()) {
            // The circuit opened while this call waited: admitted (or refused) on the Effect path.
            holding = false
            gate.leave()
            return resume(this.onEffectPath(fiber, call, this.attempt(call, before)))
          }
          const now = clock.unsafeCurrentTimeMillis()
          if (waited) token = this.fresh?.(now) ?? token
          const budget = CallPolicy.budget(progress, now, this.requestTimeoutMillis)
          if (budget._tag === "Passed") {
            holding = false
            gate.leave()
            return resume(this.onEffectPath(fiber, call, this.fail(call, progress, this.deadlinePassed(call, true))))
          }
          const started = HttpSpan.startIn(
            fiber,
            this.spanOf(fiber, call),
            this.request(call, token, budget.timeoutMillis),
            0,
            this.config.tracePropagation,
            call.traced
          )
          attempt = started
          const load = this.load
          const number = load.sending(true, now)
          const sentMillis = roundTripClock(clock)
          const sentAt = load.sentAt(clock)
          const inFlight = load.inFlight()
          const calledOff = send(started.request, (outcome) => {
            // Once only, and never after the call was called off (a transport of the application's
            // own may call back late or twice).
            if (!holding) return
            cancel = undefined
            try {
              // The load control learns of the end while the turn is held: it counts as in flight.
              const failure = Either.isLeft(outcome)
                ? this.transportFailure(call, budget.byDeadline, outcome.left)
                : undefined
              const response = Either.isRight(outcome) ? outcome.right : undefined
              load.ended(
                number,
                sentAt,
                response === undefined ? signalOfError(failure!) : signalOfStatus(response.status),
                clock,
                response === undefined ? undefined : latencySample(response.status, sentMillis),
                inFlight
              )
              holding = false
              gate.leave()
              started.end(outcome, fiber)
              if (response === undefined) return continueFrom(failed(failure!))
              const json = this.readAnswer(call, token, response, clock.unsafeCurrentTimeMillis())
              if (Either.isLeft(json)) return continueFrom({ _tag: "Answered", status: response.status, read: json })
              // The call ends here: what it makes of the answer, recorded, its span ended.
              const out = this.finished(fiber, call, progress, response.status, json.right, token)
              if (call.span !== undefined) {
                FiberSpan.end(fiber, call.span, Either.isRight(out) ? Exit.void : Exit.fail(out.left))
              }
              resume(out)
            } catch (defect) {
              if (holding) {
                holding = false
                gate.leave()
              }
              this.died(fiber, call, resume, defect)
            }
          })
          // (Answered already, synchronously: nothing is left to call off.)
          if (holding) cancel = calledOff
        } catch (defect) {
          if (holding) {
            holding = false
            gate.leave()
          }
          this.died(fiber, call, resume, defect)
        }
      })
      waited = true
      // Interrupted: out of the queue, or the request aborted on the socket and the turn given back.
      return () => {
        if (withdraw() && holding) {
          // The request aborted before its turn goes on: at most the bound is ever out at once.
          holding = false
          if (cancel !== undefined) {
            cancel()
            attempt!.end("interrupted", fiber)
          }
          gate.leave()
        }
        // (Once the call went on on the Effect path, that path ended the span: this does nothing.)
        if (call.span !== undefined) FiberSpan.end(fiber, call.span, Exit.interrupt(fiber.id()))
      }
    })
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
