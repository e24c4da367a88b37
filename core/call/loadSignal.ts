/**
 * What an attempt's end tells a client's load control: the signal its status or failure stands
 * for (the table in loadControl.ts), and the round trip the latency signal is fed.
 */
import type { ClinicalError } from "../errors.js"

/** What an attempt's end tells the limit and the breaker (a number: no object per request). */
export const Signal = {
  /** The service answered: the limit may grow, the breaker closes. */
  Answer: 0,
  /** 429: the limit comes down; the service is up. */
  Throttled: 1,
  /** 503 or an attempt timeout: the limit comes down, and it counts towards opening the breaker. */
  Overloaded: 2,
  /** Another 5xx, the network failing: it counts towards opening the breaker. */
  Down: 3,
  /** Nothing either can learn from (the call's own deadline, a call refused before sending). */
  Nothing: 4
} as const

export type Signal = typeof Signal[keyof typeof Signal]

/** What a response's status tells. */
export const signalOfStatus = (status: number): Signal =>
  status === 429 ? Signal.Throttled : status === 503 ? Signal.Overloaded : status >= 500 ? Signal.Down : Signal.Answer

/** What an attempt's failure tells (an error read from a response tells what its status does). */
export const signalOfError = (error: ClinicalError): Signal => {
  switch (error._tag) {
    case "TransportError":
      switch (error.reason) {
        case "Network":
        case "Dns":
          return Signal.Down
        case "Timeout":
          return Signal.Overloaded
        // A deadline, a certificate or a proxy's refusal says nothing of the service's load.
        case "Deadline":
        case "Tls":
        case "Proxy":
          return Signal.Nothing
        default:
          return Signal.Answer
      }
    case "InvalidRequest":
    case "CircuitOpen":
    case "TokenStoreError":
      return Signal.Nothing
    default:
      return signalOfStatus(error.status)
  }
}

/**
 * Whether a failed token request says the service is down, to the breaker: a 5xx, the network or a
 * timeout, with no pause asked for. While a pause the endpoint asked for runs (`Retry-After`,
 * remembered by the token cache), calls fail fast with its error, nothing sent: the pause bounds
 * that load itself, and counted, those fast failures opened the circuit on one 503.
 */
export const tokenFailureSaysDown = (failure: ClinicalError): boolean => {
  const signal = signalOfError(failure)
  return (signal === Signal.Down || signal === Signal.Overloaded) &&
    !("retryAfterMillis" in failure && failure.retryAfterMillis !== undefined)
}

/**
 * The clock a round trip is timed by: monotonic, in ms with their fractions. Whole ms of the wall
 * clock made a 0.6 ms round trip 0 or 1: a `base` of 0, every later round over it, the limit cut
 * to its floor on a fast service.
 */
export const roundTripMillis = (nanos: bigint): number => Number(nanos) / 1_000_000

/**
 * What an answer with `status`, to a request sent at `sentMillis`, gives the latency signal: the
 * time it went for an answer with content (2xx); a refusal (a 4xx, a 3xx) may be answered faster
 * than the service serves, and would pass for its round trip.
 */
export const latencySample = (status: number, sentMillis: number): number | undefined =>
  status < 300 ? sentMillis : undefined
