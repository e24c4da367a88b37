/** The settings of a client's load control, from the client's settings. */
import type { Settings as ClientSettings } from "../config/settings.js"
import * as CircuitBreaker from "./circuitBreaker.js"
import * as ConcurrencyLimit from "./concurrencyLimit.js"
import * as DeliveryCap from "./deliveryCap.js"
import * as Queueing from "./queueing.js"
import * as RetryBudget from "./retryBudget.js"

/** The settings of a client's load control; an `undefined` part is turned off. */
export interface Settings {
  readonly limit: ConcurrencyLimit.Settings | undefined
  /** The latency signal of the limit (on with it). */
  readonly latency: Queueing.Settings | undefined
  /** The cap from what the service delivers (on with the limit; optional: off when absent). */
  readonly delivery?: DeliveryCap.Settings | undefined
  readonly initialLimit: number
  readonly budget: RetryBudget.Settings | undefined
  readonly breaker: CircuitBreaker.Settings | undefined
}

/** The load control a client's settings describe (`toMillis`: the line's durations in ms). */
export const settingsOf = <D>(
  config: Pick<
    ClientSettings<unknown, D>,
    | "adaptiveConcurrency"
    | "maxConcurrentRequests"
    | "initialConcurrency"
    | "retryBudget"
    | "retryBudgetRatio"
    | "circuitBreakerThreshold"
    | "circuitBreakerCooldown"
    | "circuitBreakerMaxCooldown"
    | "requestTimeout"
  >,
  toMillis: (duration: D) => number
): Settings => {
  const cooldownMillis = toMillis(config.circuitBreakerCooldown)
  return {
    limit: config.adaptiveConcurrency
      ? { ...ConcurrencyLimit.DEFAULTS, max: config.maxConcurrentRequests }
      : undefined,
    latency: config.adaptiveConcurrency ? Queueing.DEFAULTS : undefined,
    delivery: config.adaptiveConcurrency ? DeliveryCap.DEFAULTS : undefined,
    initialLimit: Math.min(config.initialConcurrency, config.maxConcurrentRequests),
    budget: config.retryBudget ? { ...RetryBudget.DEFAULTS, ratio: config.retryBudgetRatio } : undefined,
    breaker: config.circuitBreakerThreshold > 0
      ? {
        failureThreshold: config.circuitBreakerThreshold,
        cooldownMillis,
        maxCooldownMillis: toMillis(config.circuitBreakerMaxCooldown),
        // A probe not heard of for as long as an attempt may take is given up.
        probeTimeoutMillis: toMillis(config.requestTimeout)
      }
      : undefined
  }
}
