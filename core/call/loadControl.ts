/**
 * A client's load control: the adaptive concurrency limit and its latency signal, the retry
 * budget and the circuit breaker (their decisions are `concurrencyLimit`, `queueing`,
 * `retryBudget` and `circuitBreaker`'s), kept in one object per client that the call path tells
 * what happens. It holds the state those pure functions replace, and moves the gate's size with
 * the limit.
 *
 * What an attempt's end tells each (see {@link signalOfStatus}, {@link signalOfError}):
 *
 * | the attempt ended in | the limit | the breaker |
 * |---|---|---|
 * | an answer (2xx, 4xx but 429, a body too large, a redirect) | an answer; a 2xx's round trip, a latency sample | an answer |
 * | 429 | an overload; the latency cuts nothing for a while | an answer: the service is up |
 * | 503, an attempt that timed out | an overload | down |
 * | another 5xx, the network failing, a name that did not resolve | nothing | down |
 * | the call's deadline, a certificate or a proxy's refusal | nothing | nothing |
 * | its token could not be had (nothing sent): a 5xx, the network, a timeout, no pause asked for | nothing | down (see {@link LoadControl.endedUnsent}) |
 *
 * When the breaker closes on an answer after being open (the service is back), the limit's last
 * good value from before the outage's failures is restored: it returns to it quickly from where
 * the outage left it (slow start again, if it had found none).
 *
 * The common path costs a few arithmetic steps: the breaker reads the clock only when it is not
 * closed; the budget counts time by the call's own reading of the wall clock. The clock is the
 * line's (`C`, read by the `nanos` each line hands over), so its test clock drives all of it.
 */
import type { ClinicalError } from "../errors.js"
import * as CircuitBreaker from "./circuitBreaker.js"
import * as ConcurrencyLimit from "./concurrencyLimit.js"
import * as DeliveryCap from "./deliveryCap.js"
import type * as Gate from "./gate.js"
import type { Settings } from "./loadSettings.js"
import { roundTripMillis, Signal, signalOfError, tokenFailureSaysDown } from "./loadSignal.js"
import * as Queueing from "./queueing.js"
import * as RetryBudget from "./retryBudget.js"

export { type Settings, settingsOf } from "./loadSettings.js"
export * from "./loadSignal.js"

/**
 * One client's load control, fed by its call path; each step that needs the time reads it from the
 * caller's clock (`C`: the line's `Clock`).
 */
export class LoadControl<C> {
  // Changed in place: the limit moves on nearly every answer, and this is the hot path.
  private readonly limitState: { limit: number; good: number; decreasedAt: number } | undefined
  private permits: number
  /** Requests sent: a request's number orders it against the limit's last decrease. */
  private sent = 0
  private balance: number
  private balanceCountedAt = Number.NEGATIVE_INFINITY
  private breaker: CircuitBreaker.State = CircuitBreaker.closed
  private admittedAt = Number.NEGATIVE_INFINITY
  /** The limit's `good` when the last streak of failures began: what an outage's end restores. */
  private goodBeforeFailures = Number.POSITIVE_INFINITY
  /** The requests sent when the streak of failures under way began (`Infinity`: none is). */
  private streakFrom = Number.POSITIVE_INFINITY
  /**
   * The failed token requests counted towards the breaker, by their error: every call that waited
   * for one request shares its error, and the request counts once however many did.
   */
  private readonly countedTokenFailures = new WeakSet<ClinicalError>()
  /** The latency signal's state between rounds (see `queueing`). */
  private latency = Queueing.initial
  /** The fastest answer of the round under way, how many requests were out when it went, and the answers so far. */
  private roundFastest = Number.POSITIVE_INFINITY
  private roundFastestInFlight = 0
  private roundAnswers = 0
  /** What the service delivered lately (see `deliveryCap`), when the limit is on, and the cap it gives. */
  private readonly delivery: DeliveryCap.DeliveryWindow | undefined
  private deliveryCap = Number.POSITIVE_INFINITY

  constructor(
    private readonly settings: Settings,
    private readonly gate: Gate.Gate,
    /** Told of each new size of the gate (the limit's gauge). */
    private readonly onLimit: (permits: number) => void,
    /** A clock's monotonic time in ns (the line's `Clock` read as it reads it). */
    private readonly nanos: (clock: C) => bigint
  ) {
    this.limitState = settings.limit === undefined
      ? undefined
      : { ...ConcurrencyLimit.initial(settings.limit, settings.initialLimit) }
    this.permits = this.limitState === undefined ? 0 : ConcurrencyLimit.permits(this.limitState.limit)
    if (this.limitState !== undefined) {
      gate.resize(this.permits)
      onLimit(this.permits)
    }
    this.balance = settings.budget === undefined ? 0 : RetryBudget.floor(settings.budget)
    this.delivery = settings.limit === undefined || settings.delivery === undefined
      ? undefined
      : new DeliveryCap.DeliveryWindow(settings.delivery)
  }

  /**
   * Whether a call may go now: `undefined`, or the milliseconds until the breaker lets a probe
   * through. A call let through while the circuit is not closed is its probe: {@link probeSince}
   * tells it when it went, read at once.
   */
  admit(clock: C): number | undefined {
    const settings = this.settings.breaker
    this.admittedAt = Number.NEGATIVE_INFINITY
    if (settings === undefined || this.breaker._tag === "Closed") return undefined
    const now = this.monotonicMillis(clock)
    const admission = CircuitBreaker.admit(settings, this.breaker, now)
    if (admission._tag === "Refused") return admission.retryAt - now
    this.breaker = admission.state
    this.admittedAt = now
    return undefined
  }

  /**
   * When the call {@link admit} just let through went as the probe (what to tell its end with), or
   * `-Infinity` when the circuit was closed.
   */
  probeSince(): number {
    return this.admittedAt
  }

  /** Whether the breaker lets every call through (the common path's condition). */
  closed(): boolean {
    return this.breaker._tag === "Closed"
  }

  /**
   * A request is about to go: its number, to tell its end with. A first attempt deposits in the
   * retry budget; `now` is the caller's wall clock (ms), which the budget counts time by.
   */
  sending(firstAttempt: boolean, now: number): number {
    const budget = this.settings.budget
    if (firstAttempt && budget !== undefined) {
      this.balance = RetryBudget.afterFirstAttempt(budget, this.balanceNow(budget, now))
    }
    return ++this.sent
  }

  /** When a request about to go was sent, for the breaker: only told apart from the probe when not closed. */
  sentAt(clock: C): number {
    return this.breaker._tag === "Closed" ? Number.NEGATIVE_INFINITY : this.monotonicMillis(clock)
  }

  /**
   * A request ended in `signal`: `number` is what {@link sending} gave it, `sentAt` what
   * {@link sentAt} did. For an answer with content (2xx), whose round trip is a latency sample:
   * `sentMillis`, {@link roundTripClock} when it went, and `inFlightAtSend`, what {@link inFlight}
   * said then. Called while its turn of the gate is still held.
   */
  ended(
    number: number,
    sentAt: number,
    signal: Signal,
    clock: C,
    sentMillis?: number,
    inFlightAtSend = 0
  ): void {
    if (signal === Signal.Nothing) return this.interrupted(sentAt, clock)
    const limit = this.settings.limit
    this.streakTold(signal, number)
    if (limit !== undefined && signal !== Signal.Down) {
      const state = this.limitState!
      if (signal === Signal.Answer) {
        // With no 429 lately, latency is what stops the probe past `good`: it goes gently.
        const gently = this.settings.latency !== undefined && this.latency.refusing === 0
        state.limit = ConcurrencyLimit.afterAnswer(limit, state, this.gate.inFlight(), gently)
        if (sentMillis !== undefined) {
          const now = this.roundTripClock(clock)
          this.sampled(number, now - sentMillis, inFlightAtSend)
          this.capped(now - sentMillis, inFlightAtSend)
        }
      } else {
        const decreasedAt = state.decreasedAt
        Object.assign(state, ConcurrencyLimit.afterOverload(limit, state, number, this.sent + 1))
        const decreased = state.decreasedAt !== decreasedAt
        // A round under way, or a cut waiting to be judged, is muddled by another decrease.
        if (decreased) this.newRound()
        const latency = this.settings.latency
        if (latency !== undefined) {
          this.latency = Queueing.afterOverload(latency, this.latency, decreased, signal === Signal.Throttled)
        }
      }
      this.resize()
    }
    this.toldBreaker(sentAt, signal, clock)
  }

  /** The clock a round trip is timed by (see {@link roundTripMillis}). */
  roundTripClock(clock: C): number {
    return roundTripMillis(this.nanos(clock))
  }

  /** A clock's time in milliseconds that never goes back (a wall clock may step back). */
  private monotonicMillis(clock: C): number {
    return Number(this.nanos(clock) / 1_000_000n)
  }

  /** Requests out now (taking a turn of the gate): what a request about to go tells {@link ended} it went with. */
  inFlight(): number {
    return this.gate.inFlight()
  }

  /**
   * A latency sample: an answer to request `number`, sent with `inFlight` out, took `millis`. It
   * counts towards the round under way (in slow start, it is a round of its own), unless it was
   * sent before the limit last came down (old news) or the wall clock stepped back meanwhile.
   */
  private sampled(number: number, millis: number, inFlight: number): void {
    const latency = this.settings.latency
    const state = this.limitState!
    if (latency === undefined || millis < 0 || number < state.decreasedAt) return
    if (millis < this.roundFastest) {
      this.roundFastest = millis
      this.roundFastestInFlight = inFlight
    }
    this.roundAnswers++
    const slowStart = state.good === Number.POSITIVE_INFINITY
    if (!slowStart && this.roundAnswers < Queueing.roundSize(latency, ConcurrencyLimit.permits(state.limit))) return
    const fastest = { millis: this.roundFastest, inFlight: this.roundFastestInFlight }
    // A copy: the state is changed in place, and a cut or a check keeps the limit from before it.
    const after = Queueing.afterRound(latency, this.settings.limit!, this.latency, { ...state }, fastest, this.sent)
    this.latency = after.state
    Object.assign(state, after.limit)
    this.newRound()
  }

  /**
   * A 2xx answer after `millis`, sent with `inFlight` out, told to the delivery cap: a limit that
   * probes is never above what it allows (twice what the service answers in a round trip), its
   * value new at the end of each interval kept.
   */
  private capped(millis: number, inFlight: number): void {
    const delivery = this.delivery
    if (delivery === undefined || millis < 0) return
    const state = this.limitState!
    if (delivery.answered(millis, inFlight, ConcurrencyLimit.permits(state.limit))) {
      // The round trip of a request that did not wait: the latency signal's `base` (checked by its
      // rounds at half the limit), or the window's fastest, when lower or with no latency signal.
      this.deliveryCap = DeliveryCap.capOf(
        this.settings.delivery!,
        delivery.rate(),
        Math.min(this.latency.base, delivery.fastest())
      )
    }
    // Only a limit probing at or past the last good one is capped: slow start and the climb back
    // to the good limit after an outage grow by half a round trip, faster than an estimate one
    // interval old allows (held by it, the limit came back from an outage to 50 of 64).
    if (state.limit >= state.good - 1 && state.limit > this.deliveryCap) state.limit = this.deliveryCap
  }

  private newRound(): void {
    this.roundFastest = Number.POSITIVE_INFINITY
    this.roundAnswers = 0
  }

  /**
   * A call's attempt ended before its request went: its token could not be had. While the circuit
   * is closed, a token request that failed as a service down does (a 5xx, the network, a timeout)
   * counts towards opening it: a service down from the start is never reached by a data request,
   * and its token requests alone must open the circuit. A failure is a request that went over the
   * wire and failed: one token request counts once, however many calls waited for it (they share
   * its error), first attempts and retries alike. Counted once per waiting call, three failed
   * requests that 200 calls waited for were hundreds of failures in a row, and the circuit stayed
   * open after the endpoint came back. While the circuit is not closed, the probe's token request
   * learnt nothing of the data service: refused (a 401, a 400), the probe is given up and the next
   * call probes (each failing as fast as its credentials say, not after minutes of cool-downs
   * doubled); anything else reopens the circuit (a 429 and a pause's fast failure included: the
   * token endpoint asked for less).
   */
  endedUnsent(sentAt: number, failure: ClinicalError, clock: C): void {
    const signal = signalOfError(failure)
    if (signal === Signal.Nothing) return this.interrupted(sentAt, clock)
    if (this.breaker._tag !== "Closed") {
      return signal === Signal.Answer ? this.interrupted(sentAt, clock) : this.toldBreaker(sentAt, Signal.Down, clock)
    }
    if (!tokenFailureSaysDown(failure) || this.countedTokenFailures.has(failure)) return
    this.countedTokenFailures.add(failure)
    this.streakTold(signal, this.sent)
    this.toldBreaker(sentAt, Signal.Down, clock)
  }

  /**
   * A call admitted at `sentAt` (see {@link probeSince}, {@link sentAt}) ended with nothing learnt
   * (interrupted, its deadline passed): if it was the probe, another call probes now.
   */
  interrupted(sentAt: number, clock: C): void {
    if (this.breaker._tag === "HalfOpen") {
      this.breaker = CircuitBreaker.abandoned(this.breaker, sentAt, this.monotonicMillis(clock))
    }
  }

  /**
   * A request numbered `number` ended in `signal`: the first failure of a streak that may open the
   * breaker keeps what the limit knew before it, and an answer (a 429 too: the service is up) to a
   * request sent since ends the streak. An answer to a request sent before it (out when the service
   * went down) ends none: a streak started again after it took `good` from a limit the outage's own
   * 503s had cut, and the limit came back from the outage towards 2 instead of the 9 it had found.
   */
  private streakTold(signal: Signal, number: number): void {
    if (signal === Signal.Answer || signal === Signal.Throttled) {
      if (number > this.streakFrom) this.streakFrom = Number.POSITIVE_INFINITY
    } else if (
      (signal === Signal.Overloaded || signal === Signal.Down) && this.streakFrom === Number.POSITIVE_INFINITY &&
      this.limitState !== undefined
    ) {
      this.goodBeforeFailures = this.limitState.good
      this.streakFrom = this.sent
    }
  }

  private toldBreaker(sentAt: number, signal: Signal, clock: C): void {
    const breaker = this.settings.breaker
    if (breaker === undefined || signal === Signal.Nothing) return
    if (signal === Signal.Answer && this.breaker === CircuitBreaker.closed) return
    const answered = signal === Signal.Answer || signal === Signal.Throttled
    const wasClosed = this.breaker._tag === "Closed"
    this.breaker = CircuitBreaker.afterOutcome(breaker, this.breaker, answered, sentAt, this.monotonicMillis(clock))
    // Back after an outage, on an answer: a 429 that closes it says the service is full, and stays said.
    if (!wasClosed && this.breaker._tag === "Closed" && signal === Signal.Answer && this.limitState !== undefined) {
      Object.assign(this.limitState, ConcurrencyLimit.afterRecovery(this.limitState, this.goodBeforeFailures))
    }
  }

  /**
   * Whether a retry after the token failure `failure` goes unpaid by the budget: when the breaker,
   * told of that failure, bounds such retries (the calls waiting for a token share one request, and
   * charged each, 64 calls spent the budget that a service down from the start never filled).
   * Anything else the breaker is not told of (a 429, a pause, a store's failure, the breaker off)
   * is paid for, or nothing bounds it.
   */
  tokenRetryUnpaid(failure: ClinicalError): boolean {
    return this.settings.breaker !== undefined && tokenFailureSaysDown(failure)
  }

  /** Whether a retry may be sent: the budget pays for it (always, with no budget). */
  retryAllowed(now: number): boolean {
    const budget = this.settings.budget
    if (budget === undefined) return true
    const balance = this.balanceNow(budget, now)
    const after = RetryBudget.afterRetry(balance)
    this.balance = after ?? balance
    return after !== undefined
  }

  /** The budget's balance at `now` (wall ms: one that stepped back counts no time). */
  private balanceNow(budget: RetryBudget.Settings, now: number): number {
    const balance = RetryBudget.balanceAt(budget, this.balance, this.balanceCountedAt, now)
    this.balanceCountedAt = Math.max(this.balanceCountedAt, now)
    return balance
  }

  private resize(): void {
    const permits = ConcurrencyLimit.permits(this.limitState!.limit)
    if (permits === this.permits) return
    this.permits = permits
    this.gate.resize(permits)
    this.onLimit(permits)
  }
}
