/**
 * How many requests a client lets out at once, found by itself, as pure functions over numbers: no
 * Effect, no clock, no allocation on an answer. AIMD as TCP and Netflix's concurrency-limits do it,
 * with TCP BIC's return towards the last good limit: a client alone regains its limit in a few
 * round trips and probes past it slowly, so that a fleet of clients, each probing on its own, does
 * not outgrow what one client's decrease gives back; a probe that meets no overload speeds up.
 * `maxConcurrentRequests` stays the ceiling. The settings were chosen on a model of the scenarios
 * (scripts/load/model.ts) and are checked against a real server (docs/resilience.md).
 *
 * | a request ended | the limit, per round trip (`limit` answers) |
 * |---|---|
 * | answered while under half of it was in flight | unchanged: an idle client must not grow a limit it never tried |
 * | answered, never overloaded yet | times 1 + `slowStart` ("slow start") |
 * | answered, more than 1 below the limit the last overload came at (`good`) | half the way back to `good - 1` (at least `increase`) |
 * | answered, from `good - 1` to `good` | +`increase` |
 * | answered, past `good` | +a quarter of how far past (at least `increase`; at most 1 when latency is the only signal) |
 * | overloaded (429, 503, an attempt that timed out), sent after the last decrease | times `backoffRatio`; `good` is the limit it came at |
 * | requests waited at the service (`queueing`'s latency signal) | times the gradient it gives; likewise |
 * | that was the service slowing down, not a line (`queueing`'s experiment) | the cut undone: the limit and `good` from before it |
 * | overloaded, but sent before the last decrease | unchanged: the same overload, already answered |
 * | the service came back after an outage (the circuit closed on an answer) | `good` back to what it was before the outage's failures: its overloads said nothing of the capacity |
 *
 * The limit is a real number; the gate lets `floor(limit)` requests out (at least 1).
 */

/** The settings the client uses unless told otherwise (see scripts/load/model.ts for why). */
export const DEFAULTS = { initial: 4, min: 1, backoffRatio: 0.7, increase: 0.03, slowStart: 0.5 } as const

/** The settings of a limit. */
export interface Settings {
  /** The least it goes down to (1: a client always makes progress). */
  readonly min: number
  /** The most it goes up to: `maxConcurrentRequests`. */
  readonly max: number
  /** What an overload multiplies it by, in (0, 1). */
  readonly backoffRatio: number
  /** How much it grows in a round trip when probing past the last good limit. */
  readonly increase: number
  /**
   * The share of itself it grows by in a round trip in slow start. Half, not TCP's whole: the round
   * trip in which requests first wait at a service is only seen to be longer once it ends, while its
   * faster answers grow the limit on; at half, it is at most twice the service's capacity then.
   */
  readonly slowStart: number
}

/** A limit's state, replaced on an overload (rare); the limit itself changes on every answer. */
export interface State {
  /** Requests let out at once: `floor(limit)`. */
  readonly limit: number
  /** The limit the last overload came at; `Infinity` until the first (slow start). */
  readonly good: number
  /** When the limit last went down (local ms); requests sent before it tell nothing new. */
  readonly decreasedAt: number
}

/** The state a client starts with: `initial`, growing fast until the first overload. */
export const initial = (settings: Settings, initialLimit: number): State => ({
  limit: clamp(settings, initialLimit),
  good: Number.POSITIVE_INFINITY,
  decreasedAt: Number.NEGATIVE_INFINITY
})

/** Past `good`, the probe grows by this share of how far past it is, per round trip. */
const PROBE_GROWTH = 0.25

const clamp = (settings: Settings, limit: number): number => Math.min(settings.max, Math.max(settings.min, limit))

/** The requests the gate lets out at once under `limit`. */
export const permits = (limit: number): number => Math.max(1, Math.floor(limit))

/**
 * The limit after a request was answered (not overloaded) with `inFlight` requests out, itself
 * included. `gently`: past `good`, at most one more a round trip (Vegas's additive step), for a
 * service whose excess waits in line instead of a 429: the signal that stops the probe, latency,
 * comes rounds later than a 429 would.
 */
export const afterAnswer = (settings: Settings, state: State, inFlight: number, gently = false): number => {
  const { good, limit } = state
  if (inFlight * 2 < permits(limit)) return limit
  // Each answer adds its share of what the limit gains in a round trip (`limit` answers).
  const perRoundTrip = good === Number.POSITIVE_INFINITY
    ? limit * settings.slowStart
    // Stryker disable next-line EqualityOperator: equivalent, at good - 1 both ways give `increase`
    : Math.max(settings.increase, limit < good - 1 ? (good - 1 - limit) / 2 : probe(limit - good, gently))
  return clamp(settings, limit + perRoundTrip / limit)
}

/** What probing `past` the last good limit adds in a round trip. */
const probe = (past: number, gently: boolean): number => gently ? Math.min(1, past * PROBE_GROWTH) : past * PROBE_GROWTH

/**
 * The state after an overload of a request sent at `sentAt`, seen at `now` (the limit times
 * `ratio`, `backoffRatio` unless a latency signal's gradient says otherwise); the same state when
 * the request was sent before the last decrease. `sentAt` and `now` are any measure that only
 * grows: a count of requests sent tells apart two sent in the same millisecond, and a clock that
 * steps back cannot make every later overload look old.
 */
export const afterOverload = (
  settings: Settings,
  state: State,
  sentAt: number,
  now: number,
  ratio = settings.backoffRatio
): State => {
  if (sentAt < state.decreasedAt) return state
  return { limit: clamp(settings, state.limit * ratio), good: state.limit, decreasedAt: now }
}

/**
 * The state when a cut for latency turns out to have been the service slowing down (see
 * `queueing`): the limit and `good` from `before` it (the limit as it is, if it grew past that
 * since). Its time stays: requests sent before it tell nothing new.
 */
export const undone = (state: State, before: Pick<State, "limit" | "good">): State => ({
  limit: Math.max(state.limit, before.limit),
  good: before.good,
  decreasedAt: state.decreasedAt
})

/**
 * The state when the service comes back after an outage (the circuit closed on an answer): the
 * last good limit from before the outage's failures, from the limit the outage left (1, often).
 * The overloads that brought it down were the outage's 503s and timeouts, not the service's
 * capacity: without this the limit would creep back by `increase` a round trip (seconds at full
 * speed lost). A client in slow start before the outage starts it again, as TCP does after a
 * timeout; one that had found the service's capacity returns half the way to it each round trip.
 */
export const afterRecovery = (state: State, goodBeforeOutage: number): State => ({ ...state, good: goodBeforeOutage })
