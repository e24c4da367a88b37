/** The retry policy (core/call/retryPolicy.ts) a client's settings describe (the core's reading). */
import * as Duration from "effect/Duration"
import type { RetryPolicy } from "../../../core/call/retryPolicy.js"
import { retryPolicyOf } from "../../../core/config/settings.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"

/** The policy a client's settings describe, in milliseconds. */
export const fromConfig = (config: ClinicalConfig.Service): RetryPolicy => retryPolicyOf(config, Duration.toMillis)
