/**
 * What core's token runners (the sharer in `tokenSharing`, the keeper in `TokenService`) take of
 * Effect 4 alike (core/token/tokenLine.ts): its modules, its timeout, a metric, its errors.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Effects from "../../../../core/effects.js"
import type { TokenLine } from "../../../../core/token/tokenLine.js"
import type { HttpError } from "../../ClinicalError.js"
import { fromCore } from "../fromCore.js"
import * as Telemetry from "../observability/telemetry.js"

/** Any of this line's effects, as core sees them. */
export type AnyEffect = Effect.Effect<any, any>

export const tokenLine: TokenLine<AnyEffect, Redacted.Redacted<string>, HttpError> = {
  ...Effects.common({ Effect, Clock, Random, Deferred, Redacted }),
  timeout: (operation, millis, onTimeout) =>
    Effect.timeoutOrElse(operation, { duration: millis, orElse: () => Effect.fail(onTimeout()) }),
  countThrottled: Metric.update(Telemetry.throttledFastFails, 1),
  wrap: fromCore
}
