/**
 * A queue's settings, checked (the core's: core/queue/queueSettings.ts), the refusal as this line's
 * `InvalidConfig` and the keys `Redacted`.
 */
import * as Either from "effect/Either"
import * as Core from "../../../core/queue/queueSettings.js"
import type { InvalidConfig } from "../../ClinicalError.js"
import { reveal } from "../validate.js"
import { keyHold } from "./jobSeal.js"
import { fromCore } from "./queueError.js"

export type { IoredisClient, QueueOptions, Settings } from "../../../core/queue/queueSettings.js"

/** The settings of `options`, or the `InvalidConfig` naming the one refused (never its value). */
export const settingsOf = (options: Core.QueueOptions): Either.Either<Core.Settings, InvalidConfig> => {
  const settings = Core.settingsOf(options, reveal, keyHold)
  return "keys" in settings ? Either.right(settings) : Either.left(fromCore(settings.error) as InvalidConfig)
}
