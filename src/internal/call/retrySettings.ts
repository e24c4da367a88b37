/** The retry policy (core/call/retryPolicy.ts) a client's settings describe. */
import * as Duration from "effect/Duration"
import type { RetryPolicy } from "../../../core/call/retryPolicy.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"

/** The policy a client's settings describe, in milliseconds. */
export const fromConfig = (config: ClinicalConfig.Service): RetryPolicy => ({
  maxRetries: config.maxRetries,
  baseDelayMillis: Duration.toMillis(config.retryBaseDelay),
  maxDelayMillis: Duration.toMillis(config.retryMaxDelay),
  retryRateLimited: config.retryRateLimited
})
