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
 *
 * This is the hot path of every call, so it is written for cost: no timer of its own when the
 * token is cached and a permit is free (the transport's own timeout, bounded by the deadline,
 * does the work), metrics tagged once, secrets gathered only when an error needs them.
 */
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
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import { type ClinicalError, type HttpError, type Operation, TransportError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import * as FiberSpan from "../observability/fiberSpan.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as MetricUpdater from "../observability/metricUpdater.js"
import * as Telemetry from "../observability/telemetry.js"
import * as FreshToken from "../token/freshToken.js"
import { labelled } from "./attempt.js"
import { callback } from "./callback.js"
import * as CallPolicy from "./callPolicy.js"
import * as Gate from "./gate.js"
import { readJson } from "./response.js"
import { fromConfig } from "./retryPolicy.js"
import { SecretBodyRequest, type SecretText } from "./secretText.js"

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

/**
 * A data request as the transport gets it (see {@link Call} on why a class). Its `body` is an
 * Effect `Redacted`, made only if a transport reads it: the library's own take the text itself
 * (see `internal/secretText`).
 */
class DataRequest extends SecretBodyRequest implements HttpTransport.TransportRequest {
  readonly method = "POST"
  declare readonly body: Redacted.Redacted<string>
  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, HttpTransport.WireValue>>,
    secretBody: SecretText,
    readonly maxResponseBytes: number,
    readonly timeoutMillis: number
  ) {
    super(secretBody)
  }
}

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

/** Builds a call function over the given services (with a gate of its own: see {@link forClient}). */
export const make = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service
): AuthorizedPost => {
  const retry = fromConfig(config)
  const resendable: CallPolicy.Policy = { ...retry, resendable: true }
  const singleUse: CallPolicy.Policy = { ...retry, resendable: false }
  const deadlineMillis = Duration.toMillis(config.deadline)
  const requestTimeoutMillis = Duration.toMillis(config.requestTimeout)
  const maxRetryAfterMillis = Duration.toMillis(config.maxRetryAfter)
  const gate = Gate.make(config.maxConcurrentRequests)
  // Tagged once per operation name: the names come from definitions in code, a small fixed set.
  const metricsByOperation = new Map<Operation, ReturnType<typeof operationMetrics>>()
  const metricsOf = (operation: Operation) => {
    let metrics = metricsByOperation.get(operation)
    if (metrics === undefined) metricsByOperation.set(operation, metrics = operationMetrics(operation))
    return metrics
  }

  const deadlinePassed = (call: AnyCall): HttpError =>
    new TransportError({
      operation: call.operation,
      reason: "Deadline",
      method: "POST",
      url: call.url,
      detail: `the call's deadline of ${Duration.format(config.deadline)} passed`
    })

  // The headers change with the token only: built once per token, not on every call.
  let headersToken: TokenService.AccessToken | undefined
  let headers: Readonly<Record<string, HttpTransport.WireValue>> = {}
  const headersFor = (token: TokenService.AccessToken) => {
    if (token !== headersToken) {
      headers = dataHeaders(config, token.authorization)
      headersToken = token
    }
    return headers
  }

  const request = (
    call: AnyCall,
    token: TokenService.AccessToken,
    timeoutMillis: number
  ): HttpTransport.TransportRequest =>
    new DataRequest(call.url, headersFor(token), call.body, config.maxResponseBytes, timeoutMillis)

  /** A transport's failure as the call's: a timeout that was really the deadline says so. */
  const transportFailure = (call: AnyCall, byDeadline: boolean, error: TransportError): HttpError =>
    byDeadline && error.reason === "Timeout" ? deadlinePassed(call) : labelled(error, call.operation, call.secrets())

  // One request with the attempt timeout, cut short by the deadline if that comes first.
  const exchange = (call: AnyCall, progress: CallPolicy.Progress, token: TokenService.AccessToken) =>
    Effect.clockWith((clock) => {
      const budget = CallPolicy.budget(progress, clock.unsafeCurrentTimeMillis(), requestTimeoutMillis)
      if (budget._tag === "Passed") return Effect.fail(deadlinePassed(call))
      return Effect.mapError(
        HttpSpan.attempt(
          request(call, token, budget.timeoutMillis),
          progress.attempts - 1,
          config.tracePropagation,
          transport.send,
          call.traced
        ),
        (error) => transportFailure(call, budget.byDeadline, error)
      )
    })

  // A turn is held only while the request is in flight. The wait for one needs no timer of its
  // own to respect the deadline: turns are given in arrival order, so every call ahead started
  // earlier, has an earlier deadline, and holds its turn no longer than that (its request's
  // timeout is cut to it). A turn that comes too late fails at once in `exchange`.
  const withTurn = <A>(effect: Effect.Effect<A, HttpError>) => gate.run(effect)

  // The token: at once when cached; a wait for a refresh is bounded by the deadline.
  const token = (call: AnyCall, progress: CallPolicy.Progress) =>
    Effect.clockWith((clock) =>
      Effect.mapError(
        tokens.getWithin(Math.max(0, progress.deadlineAt - clock.unsafeCurrentTimeMillis())),
        (error): ClinicalError =>
          error._tag === "TransportError" && error.reason === "Deadline" ? deadlinePassed(call) : error
      )
    )

  // The call's bookkeeping in one step: attempts histogram, failures counter, span attributes.
  // Metrics are updated with the fiber's metric tags, as `Metric.update` would.
  const recordIn = (
    fiber: FiberSpan.AnyFiber,
    call: AnyCall,
    progress: CallPolicy.Progress,
    status: number | undefined,
    error: ClinicalError | undefined
  ): void => {
    const tags = fiber.getFiberRef(FiberRef.currentMetricLabels)
    const m = metricsOf(call.operation)
    m.attempts(progress.attempts, tags)
    if (error !== undefined) m.failure(error._tag).unsafeUpdate(1, tags)
    const span = spanOf(fiber, call)
    if (span !== undefined && span._tag === "Span") {
      span.attribute("clinical.attempts", progress.attempts)
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("clinical.error", error._tag)
    }
  }

  const record = (
    call: AnyCall,
    progress: CallPolicy.Progress,
    status: number | undefined,
    error: ClinicalError | undefined
  ) =>
    Effect.withFiberRuntime<void>((fiber) => {
      recordIn(fiber, call, progress, status, error)
      return Effect.void
    })

  const answer = (
    call: AnyCall,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): JsonResponse => new Answer(status, json, call, config.applicationId, used)

  /** Where the call's attempts and attributes go: its own span, else the current one (`Effect.withSpan`'s). */
  const spanOf = (fiber: FiberSpan.AnyFiber, call: AnyCall): Tracer.AnySpan | undefined =>
    call.traced ? call.span ?? fiber.currentSpan : undefined

  /** The end of a call whose answer reads: what the call makes of it, recorded (a failure as any other). */
  const finished = <A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Either.Either<A, ClinicalError> => {
    const out = call.finish(answer(call, status, json, used))
    recordIn(fiber, call, progress, status, Either.isLeft(out) ? out.left : undefined)
    return out
  }

  const succeed = <A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    status: number,
    json: unknown,
    used: TokenService.AccessToken | undefined
  ): Effect.Effect<A, ClinicalError> =>
    Effect.withFiberRuntime((fiber) => finished(fiber, call, progress, status, json, used))

  const fail = (call: AnyCall, progress: CallPolicy.Progress, error: ClinicalError) =>
    Effect.zipRight(record(call, progress, "status" in error ? error.status : undefined, error), Effect.fail(error))

  /**
   * The Effect path of a call from `effect` on: under the call's span when the caller handed one
   * (its children, its logs), which it ends when the call does.
   */
  const onEffectPath = <A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    effect: Effect.Effect<A, ClinicalError>
  ): Effect.Effect<A, ClinicalError> => {
    const span = call.span
    return span === undefined ? effect : Effect.onExit(
      Effect.withParentSpan(effect, span),
      (exit) => Effect.sync(() => FiberSpan.end(fiber, span, exit))
    )
  }

  /** How a failed exchange ended: sent, unless the request surely never reached the server. */
  const failed = (error: HttpError): CallPolicy.Outcome => ({
    _tag: "Failed",
    error,
    sent: !(error._tag === "TransportError" && error.requestSent === false)
  })

  // Acts on the pure step for how the attempt ended.
  const proceed = <A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    outcome: CallPolicy.Outcome,
    used: TokenService.AccessToken | undefined
  ): Effect.Effect<A, ClinicalError> =>
    Effect.flatMap(Random.next, (random) =>
      Effect.clockWith((clock) => {
        const policy = call.resendable ? resendable : singleUse
        const step = CallPolicy.next(policy, progress, outcome, clock.unsafeCurrentTimeMillis(), random)
        switch (step._tag) {
          case "Done":
            return succeed(call, step.progress, step.status, step.json, used)
          case "Fail":
            return fail(call, step.progress, step.error)
          case "RefreshToken":
            return Effect.logDebug("token rejected; refreshing it and retrying once").pipe(
              Effect.annotateLogs({
                status: outcome._tag === "Answered" ? outcome.status : 0,
                generation: used?.generation
              }),
              Effect.zipRight(used === undefined ? Effect.void : tokens.invalidate(used)),
              Effect.zipRight(Effect.suspend(() => attempt(call, step.progress)))
            )
          case "Retry":
            return Metric.increment(metricsOf(call.operation).retry(step.cause)).pipe(
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
              Effect.zipRight(Effect.suspend(() => attempt(call, step.progress)))
            )
        }
      }))

  /** A response read into its JSON, or the error it stands for. */
  const readAnswer = (
    call: AnyCall,
    used: TokenService.AccessToken,
    response: HttpTransport.TransportResponse,
    now: number
  ) =>
    readJson({
      operation: call.operation,
      method: "POST",
      url: call.url,
      secrets: () => [...call.secrets(), used.token, config.applicationId],
      now,
      maxRetryAfterMillis
    }, response)

  const answered = <A>(
    call: Call<A>,
    progress: CallPolicy.Progress,
    used: TokenService.AccessToken,
    response: HttpTransport.TransportResponse
  ): Effect.Effect<A, ClinicalError> =>
    Effect.clockWith((clock) => {
      const read = readAnswer(call, used, response, clock.unsafeCurrentTimeMillis())
      // The common case needs no step: a body that reads is the answer.
      return read._tag === "Right"
        ? succeed(call, progress, response.status, read.right, used)
        : proceed(call, progress, { _tag: "Answered", status: response.status, read }, used)
    })

  const attempt = <A>(call: Call<A>, before: CallPolicy.Progress): Effect.Effect<A, ClinicalError> => {
    const progress = CallPolicy.attempted(before)
    return Effect.matchEffect(token(call, progress), {
      // Nothing of this call was sent yet: a token failure may always be retried.
      onFailure: (error) => proceed(call, progress, { _tag: "Failed", error, sent: false }, undefined),
      onSuccess: (used) =>
        Effect.matchEffect(withTurn(exchange(call, progress, used)), {
          onFailure: (error) => proceed(call, progress, failed(error), used),
          onSuccess: (response) => answered(call, progress, used, response)
        })
    })
  }

  const fresh = FreshToken.readerOf<TokenService.AccessToken>(tokens)
  const dispatch = transport.dispatch

  /**
   * The call's common path, with no fiber suspended but for the wait on the socket: a fresh token
   * read without an Effect, a turn taken (or waited for) in a callback, the request dispatched and
   * its answer read in the transport's own callback. Whatever is not the common case (no fresh
   * token, a failure, an answer that does not read) continues on the Effect path from exactly the
   * point reached (`proceed` with this attempt's progress and outcome), so that every rule lives
   * once. Only a transport that offers `dispatch` has this path.
   */
  const common = <A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    progress: CallPolicy.Progress,
    used: TokenService.AccessToken,
    send: NonNullable<HttpTransport.Service["dispatch"]>,
    clock: Clock.Clock
  ): Effect.Effect<A, ClinicalError> =>
    callback<A, ClinicalError>((resume) => {
      let holding = false
      // The request in flight: its attempt, and how to call it off (two variables, no object per call).
      let attempt: HttpSpan.Attempt | undefined
      let cancel: (() => void) | undefined
      // Anything but the answer goes on on the Effect path, from this attempt.
      const continueFrom = (outcome: CallPolicy.Outcome) =>
        resume(onEffectPath(fiber, call, proceed(call, progress, outcome, used)))
      const withdraw = gate.take(() => {
        holding = true
        const budget = CallPolicy.budget(progress, clock.unsafeCurrentTimeMillis(), requestTimeoutMillis)
        if (budget._tag === "Passed") {
          holding = false
          gate.leave()
          return resume(onEffectPath(fiber, call, fail(call, progress, deadlinePassed(call))))
        }
        const started = HttpSpan.startIn(
          fiber,
          spanOf(fiber, call),
          request(call, used, budget.timeoutMillis),
          0,
          config.tracePropagation,
          call.traced
        )
        attempt = started
        cancel = send(started.request, (outcome) => {
          holding = false
          cancel = undefined
          gate.leave()
          started.end(outcome, fiber)
          if (Either.isLeft(outcome)) {
            return continueFrom(failed(transportFailure(call, budget.byDeadline, outcome.left)))
          }
          const response = outcome.right
          const json = readAnswer(call, used, response, clock.unsafeCurrentTimeMillis())
          if (Either.isLeft(json)) return continueFrom({ _tag: "Answered", status: response.status, read: json })
          // The call ends here: what it makes of the answer, recorded, its span ended.
          const out = finished(fiber, call, progress, response.status, json.right, used)
          if (call.span !== undefined) {
            FiberSpan.end(fiber, call.span, Either.isRight(out) ? Exit.void : Exit.fail(out.left))
          }
          resume(out)
        })
      })
      // Interrupted: out of the queue, or the request aborted on the socket and the turn given back.
      return () => {
        if (withdraw() && holding) {
          holding = false
          gate.leave()
          if (cancel !== undefined) {
            cancel()
            attempt!.end("interrupted", fiber)
          }
        }
        // (Once the call went on on the Effect path, that path ended the span: this does nothing.)
        if (call.span !== undefined) FiberSpan.end(fiber, call.span, Exit.interrupt(fiber.id()))
      }
    })

  const start = <A>(fiber: FiberSpan.AnyFiber, call: Call<A>): Effect.Effect<A, ClinicalError> => {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const now = clock.unsafeCurrentTimeMillis()
    const begun = CallPolicy.begin(now, deadlineMillis)
    const used = dispatch === undefined || (call.traced && !FiberSpan.canMake(fiber, spanOf(fiber, call)))
      ? undefined
      : fresh?.(now)
    return used === undefined
      ? onEffectPath(fiber, call, attempt(call, begun))
      : common(fiber, call, CallPolicy.attempted(begun), used, dispatch!, clock)
  }

  return <A>(call: Call<A>, fiber?: FiberSpan.AnyFiber) =>
    fiber === undefined
      ? Effect.withFiberRuntime<A, ClinicalError>((current) => start(current, call))
      : start(fiber, call)
}
