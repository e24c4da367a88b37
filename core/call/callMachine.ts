/**
 * One call's decisions as a machine with no I/O (the "sans-IO" shape of h11 or quinn-proto): each
 * line's runner feeds it what happened (a method per event: the call began, a token came or could
 * not be had, a turn of the gate was given, a reply came, a sleep ended) and performs the action it
 * answers with (see {@link Action}); the action's details are read from the machine's fields. The
 * rules are `callPolicy`'s (attempts, retries, the deadline, 401/419 refreshed once) and the
 * client's load control's (admission, the limit, the retry budget, the breaker).
 *
 * The machine is a class changed in place, not a value remade per step: it runs on every call, and
 * the common path (a cached token, a free turn, a reply that reads) costs the object itself and no
 * other allocation (see docs/architecture.md, "Objects made per call"). It reads no clock of its
 * own: the times come with the events, and the load control reads the runner's clock (`C`) where
 * it measures round trips.
 *
 * | event | action |
 * |---|---|
 * | `start` | `Turn` when the cache has a fresh token, else `Token`; `Fail` (circuit open) |
 * | `tokenTaken` | `Turn` |
 * | `tokenFailed` | what the policy says of a failure nothing of which was sent |
 * | `turnGiven` | `Send` (the turn held until the reply); `Fail` (circuit opened meanwhile, deadline passed) |
 * | `replied` + `answered` | `Finish` |
 * | `replied` + `answeredWith`, `sendFailed` + `afterFailure` | `Refresh`, `Sleep` or `Fail` |
 * | `refreshed`, `woke` | as `start`: the next attempt |
 */
import type { ClinicalError, TransportError } from "../errors.js"
import type { Reader } from "../token/freshToken.js"
import * as CallPolicy from "./callPolicy.js"
import type { LoadControl } from "./loadControl.js"
import { latencySample, signalOfError, signalOfStatus } from "./loadSignal.js"

/**
 * What the runner does next:
 * - `Token`: get a token within `waitMillis` (the deadline), then `tokenTaken` or `tokenFailed`;
 * - `Turn`: wait for a turn of the client's gate, then `turnGiven`;
 * - `Send`: send the request with `token` and an attempt timeout of `waitMillis`, holding the turn;
 *   tell `replied` or `sendFailed` while still holding it, give it back, then read the reply
 *   (`answered`, `answeredWith`) or go on (`afterFailure`);
 * - `Finish`: the call ends with what it makes of the answer (`status`, `json`);
 * - `Fail`: the call ends with `error` (`refusedBy` says when load control refused it);
 * - `Refresh`: drop `token` from the cache (the server refused it), then `refreshed`;
 * - `Sleep`: wait `waitMillis` before retry number `retried` (for `cause`), then `woke`.
 *
 * After `turnGiven` answers anything but `Send`, the runner gives the turn back first.
 */
export type Action = "Token" | "Turn" | "Send" | "Finish" | "Fail" | "Refresh" | "Sleep"

/** What the calls of one client share: its rules, its load control, its cache's reader, and its line's errors. */
export interface Client<T, E extends ClinicalError, C> {
  readonly resendable: CallPolicy.Policy
  readonly singleUse: CallPolicy.Policy
  readonly deadlineMillis: number
  readonly requestTimeoutMillis: number
  /** The deadline as the messages say it (`5s`). */
  readonly deadlineText: string
  readonly load: LoadControl<C>
  /** The cache's fresh token at a time, read without waiting (see core/token/freshToken). */
  readonly fresh: Reader<T> | undefined
  /** A failure the machine decided on, as the line's error class. */
  readonly wrap: (error: ClinicalError) => E
}

/** A failure that went nowhere: the transport says so of a request it never sent. */
const surelyUnsent = (error: ClinicalError): boolean => error._tag === "TransportError" && error.requestSent === false

/** One call. Its fields are the current action's details; it is the call's progress too. */
export class CallMachine<T, E extends ClinicalError, C> implements CallPolicy.Progress {
  deadlineAt = 0
  attempts = 0
  retried = 0
  tokenRefreshed = false
  /** `Send`'s token; `Refresh`'s token to drop; the token the last attempt sent (`undefined` when it had none). */
  token: T | undefined = undefined
  /** `Token`'s and `Send`'s time allowed, `Sleep`'s wait, in ms. */
  waitMillis = 0
  /** `Fail`'s error. */
  error: E | undefined = undefined
  /** `Fail` of a call that load control refused: by the open circuit or the spent retry budget. */
  refusedBy: "circuit" | "budget" | undefined = undefined
  /** The last answer's status (`Finish`'s, `Refresh`'s), `undefined` before one. */
  status: number | undefined = undefined
  /** `Finish`'s answer. */
  json: unknown = undefined
  /** `Sleep`'s cause of the retry. */
  cause = ""

  private taken: T | undefined = undefined
  private takenAt = Number.NaN
  /** When the attempt was admitted as the breaker's probe, `-Infinity` if not (see `LoadControl.probeSince`). */
  private probeAt = Number.NEGATIVE_INFINITY
  private byDeadline = false
  // What the load control gave the request in flight, to tell its end with.
  private number = 0
  private sentAt = 0
  private sentMillis = 0
  private inFlight = 0
  private failure: E | undefined = undefined

  constructor(
    private readonly client: Client<T, E, C>,
    readonly operation: string,
    readonly url: string,
    /** See `CallPolicy.Policy.resendable`. */
    readonly resendable: boolean,
    /** The runner's clock, which the load control reads round trips from. */
    private readonly clock: C
  ) {}

  /** The call begins at `now` (wall ms). */
  start(now: number): Action {
    this.deadlineAt = now + this.client.deadlineMillis
    return this.attempt(now)
  }

  /** A token was had. */
  tokenTaken(token: T, now: number): Action {
    this.taken = token
    this.takenAt = now
    return "Turn"
  }

  /** No token could be had (`error`, the cache's); nothing of this attempt was sent, so it may always be retried. */
  tokenFailed(error: E, now: number, random: number): Action {
    const failure = error._tag === "TransportError" && error.reason === "Deadline" ? this.deadlinePassed(true) : error
    this.client.load.endedUnsent(this.probeAt, failure, this.clock)
    this.token = undefined
    return this.proceed({ _tag: "Failed", error: failure, sent: false }, now, random)
  }

  /** A turn of the gate is this call's. */
  turnGiven(now: number): Action {
    const load = this.client.load
    // Admitted while closed, its turn coming once the circuit opened: asked again.
    if (this.probeAt === Number.NEGATIVE_INFINITY && !load.closed()) {
      const waitMillis = load.admit(this.clock)
      if (waitMillis !== undefined) {
        this.attempts--
        return this.refused(waitMillis)
      }
      this.probeAt = load.probeSince()
    }
    // The cache's token may have been replaced while the call waited (a wait the limit can make long).
    const taken = this.taken!
    this.token = now === this.takenAt ? taken : this.client.fresh?.(now) ?? taken
    const budget = CallPolicy.budget(this, now, this.client.requestTimeoutMillis)
    if (budget._tag === "Passed") {
      // Nothing went and nothing was learnt: a probe lets another call probe.
      load.interrupted(this.probeAt, this.clock)
      return this.failed(this.deadlinePassed(true))
    }
    this.byDeadline = budget.byDeadline
    this.waitMillis = budget.timeoutMillis
    this.number = load.sending(this.attempts === 1, now)
    this.sentMillis = load.roundTripClock(this.clock)
    this.sentAt = load.sentAt(this.clock)
    this.inFlight = load.inFlight()
    return "Send"
  }

  /** The request sent was answered with `status` (told while its turn is held: it counts as in flight). */
  replied(status: number): void {
    this.client.load.ended(
      this.number,
      this.sentAt,
      signalOfStatus(status),
      this.clock,
      latencySample(status, this.sentMillis),
      this.inFlight
    )
  }

  /**
   * The request sent got no usable response (`error`, labelled by the runner): told while its turn
   * is held. A timeout that was the deadline's says so.
   */
  sendFailed(error: E): void {
    const failure = this.byDeadline && error._tag === "TransportError" && error.reason === "Timeout"
      ? this.deadlinePassed(false)
      : error
    this.failure = failure
    this.client.load.ended(this.number, this.sentAt, signalOfError(failure), this.clock)
  }

  /** After `sendFailed`, the turn given back: what the policy says of the failure. */
  afterFailure(now: number, random: number): Action {
    const failure = this.failure!
    this.failure = undefined
    return this.proceed({ _tag: "Failed", error: failure, sent: !surelyUnsent(failure) }, now, random)
  }

  /** The reply's body read into `json` (a 2xx): the call is done. */
  answered(status: number, json: unknown): Action {
    this.status = status
    this.json = json
    return "Finish"
  }

  /** The reply stands for `error` (its status's, or a body that does not read). */
  answeredWith(status: number, error: E, now: number, random: number): Action {
    return this.proceed({ _tag: "Answered", status, read: { _tag: "Left", left: error } }, now, random)
  }

  /** The refused token was dropped: the next attempt, at once. */
  refreshed(now: number): Action {
    return this.attempt(now)
  }

  /** The wait before a retry ended. */
  woke(now: number): Action {
    return this.attempt(now)
  }

  /** The call was interrupted: if its attempt was the breaker's probe, another call probes now. */
  interrupted(): void {
    if (this.probing()) this.client.load.interrupted(this.probeAt, this.clock)
  }

  /** Whether an interruption now must be told (`interrupted`): the attempt may be the breaker's probe. */
  probing(): boolean {
    return this.probeAt !== Number.NEGATIVE_INFINITY
  }

  private attempt(now: number): Action {
    const load = this.client.load
    const waitMillis = load.admit(this.clock)
    if (waitMillis !== undefined) return this.refused(waitMillis)
    this.attempts++
    this.probeAt = load.probeSince()
    const fresh = this.client.fresh?.(now)
    if (fresh !== undefined) return this.tokenTaken(fresh, now)
    this.waitMillis = Math.max(0, this.deadlineAt - now)
    return "Token"
  }

  private proceed(outcome: CallPolicy.Outcome<E>, now: number, random: number): Action {
    const policy = this.resendable ? this.client.resendable : this.client.singleUse
    if (outcome._tag === "Answered") this.status = outcome.status
    const step = CallPolicy.next(policy, this, outcome, now, random)
    switch (step._tag) {
      case "Done":
        return this.answered(step.status, step.json)
      case "Fail":
        return this.failed(step.error)
      case "RefreshToken":
        this.tokenRefreshed = true
        return "Refresh"
      case "Retry": {
        const load = this.client.load
        // A retry after the token could not be had as the service down is not paid from the
        // budget: the breaker bounds it (LoadControl.tokenRetryUnpaid).
        if (!(this.token === undefined && load.tokenRetryUnpaid(step.error)) && !load.retryAllowed(now)) {
          this.refusedBy = "budget"
          return this.failed(step.error)
        }
        this.retried = step.progress.retried
        this.waitMillis = step.delayMillis
        this.cause = step.cause
        return "Sleep"
      }
    }
  }

  /** The open circuit refused the call: nothing is sent, the caller learns when the service is probed. */
  private refused(waitMillis: number): Action {
    this.refusedBy = "circuit"
    return this.failed(
      this.client.wrap({ _tag: "CircuitOpen", operation: this.operation, retryAfterMillis: waitMillis })
    )
  }

  private failed(error: E): Action {
    this.error = error
    return "Fail"
  }

  /** The call's deadline passed; `unsent` when it passed before the request went (waiting for a turn or a token). */
  private deadlinePassed(unsent: boolean): E {
    const error: TransportError = {
      _tag: "TransportError",
      operation: this.operation,
      reason: "Deadline",
      ...(unsent ? { requestSent: false } : {}),
      method: "POST",
      url: this.url,
      detail: `the call's deadline of ${this.client.deadlineText} passed`
    }
    return this.client.wrap(error)
  }
}
