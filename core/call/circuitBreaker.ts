/**
 * Whether a client sends at all, as pure functions over an immutable state: after
 * `failureThreshold` failures in a row that say the service is down (the transport failing, a
 * 5xx, an attempt that timed out), calls fail at once with `CircuitOpen` for a cool-down instead
 * of piling on a service that is down; then one call at a time is let through to probe it
 * (half-open); the first that gets an answer closes the circuit. Each probe that fails doubles the
 * cool-down, up to `maxCooldownMillis`, so that a service down for long sees a request every few
 * seconds from each client, and one that is back is found within one cool-down.
 *
 * | state | a call asks to go | a request ends in an answer | ...in a failure that says the service is down |
 * |---|---|---|---|
 * | `Closed` | goes | the count of failures in a row back to 0 | counted; at the threshold, `Open` for `cooldownMillis` |
 * | `Open`, before its time | refused, until its time | (sent before it opened) nothing | nothing |
 * | `Open`, at its time | goes as the probe: `HalfOpen` | | |
 * | `HalfOpen` | refused, to ask again in {@link PROBE_RECHECK_MILLIS} (at most a cool-down): one probe at a time; once the probe is `probeTimeoutMillis` old, goes as a new probe | `Closed` | the probe's: `Open` again, the cool-down doubled; one sent before: nothing |
 *
 * A probe that ends with nothing learnt (its call interrupted, its deadline passed) is
 * {@link abandoned}: the next call probes at once, rather than every call being refused until
 * `probeTimeoutMillis`.
 *
 * An answer is any response the service made, a 4xx or a 429 included: it is up (a 429 is the
 * concurrency limit's to act on, not this).
 */

/** The settings of a breaker. */
export interface Settings {
  /** Failures in a row that open the circuit. */
  readonly failureThreshold: number
  /** The first cool-down, in ms. */
  readonly cooldownMillis: number
  /** The longest cool-down, in ms. */
  readonly maxCooldownMillis: number
  /**
   * How long a probe may go without an outcome before another call probes instead (a probe
   * interrupted, or never sent, is never heard of): the attempt timeout.
   */
  readonly probeTimeoutMillis: number
}

/** The breaker the client uses unless told otherwise (its probe timeout is the attempt timeout). */
export const DEFAULTS: Omit<Settings, "probeTimeoutMillis"> = {
  failureThreshold: 10,
  cooldownMillis: 500,
  maxCooldownMillis: 2000
}

/**
 * How soon a call refused while the probe runs asks again. The probe's outcome comes within a round
 * trip: a call told to wait a whole cool-down (up to 2 s) would still be waiting long after the
 * probe closed the circuit, and a batch would go on one person at a time meanwhile. Asking costs
 * no request: only this decision.
 */
export const PROBE_RECHECK_MILLIS = 100

export type State =
  | { readonly _tag: "Closed"; readonly failures: number }
  | { readonly _tag: "Open"; readonly until: number; readonly cooldownMillis: number }
  /** Probing since `since`: a failure of a request sent before it is not the probe's. */
  | { readonly _tag: "HalfOpen"; readonly cooldownMillis: number; readonly since: number }

/** A circuit with no failure yet. */
export const closed: State = { _tag: "Closed", failures: 0 }

/** What a call that asks to go at `now` does: go (maybe as the probe), or be refused until `retryAt`. */
export type Admission =
  | { readonly _tag: "Go"; readonly state: State }
  | { readonly _tag: "Refused"; readonly retryAt: number }

export const admit = (settings: Settings, state: State, now: number): Admission => {
  switch (state._tag) {
    case "Closed":
      return { _tag: "Go", state }
    case "Open":
      return now < state.until
        ? { _tag: "Refused", retryAt: state.until }
        : { _tag: "Go", state: { _tag: "HalfOpen", cooldownMillis: state.cooldownMillis, since: now } }
    case "HalfOpen": {
      const probeGivenUpAt = state.since + settings.probeTimeoutMillis
      return now >= probeGivenUpAt
        ? { _tag: "Go", state: { _tag: "HalfOpen", cooldownMillis: state.cooldownMillis, since: now } }
        : {
          _tag: "Refused",
          retryAt: Math.min(now + Math.min(state.cooldownMillis, PROBE_RECHECK_MILLIS), probeGivenUpAt)
        }
    }
  }
}

/**
 * The state after a request sent at `sentAt` ended at `now`: in an answer, or in a failure that
 * says the service is down.
 */
export const afterOutcome = (
  settings: Settings,
  state: State,
  answered: boolean,
  sentAt: number,
  now: number
): State => {
  switch (state._tag) {
    case "Closed":
      if (answered) return closed
      return state.failures + 1 < settings.failureThreshold
        ? { _tag: "Closed", failures: state.failures + 1 }
        : { _tag: "Open", until: now + settings.cooldownMillis, cooldownMillis: settings.cooldownMillis }
    case "Open":
      return state
    case "HalfOpen": {
      if (answered) return closed
      if (sentAt < state.since) return state
      const cooldownMillis = Math.min(settings.maxCooldownMillis, state.cooldownMillis * 2)
      return { _tag: "Open", until: now + cooldownMillis, cooldownMillis }
    }
  }
}

/**
 * The state after a call admitted at `sentAt` ended with nothing learnt (interrupted, its deadline
 * passed before it sent): if it was the probe (sent at or after `since`), open with its time come,
 * so that the next call probes; any other state is left as it is.
 */
export const abandoned = (state: State, sentAt: number, now: number): State =>
  state._tag === "HalfOpen" && sentAt >= state.since
    ? { _tag: "Open", until: now, cooldownMillis: state.cooldownMillis }
    : state
