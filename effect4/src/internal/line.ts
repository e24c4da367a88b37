/**
 * How this line holds secrets and durations, for the core's readings (settings, the network's
 * secrets): one object, so that every reading reveals a secret the same guarded way.
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Settings from "../../../core/config/settings.js"

/**
 * Reads a value that may be `Redacted` without ever logging it. Something that only looks like a
 * `Redacted` (Effect holds no value for it) reads as `undefined`, which every check refuses.
 */
const reveal = (value: unknown): unknown => {
  if (!Redacted.isRedacted(value)) return value
  try {
    return Redacted.value(value)
  } catch {
    return undefined
  }
}

/** How this line holds secrets and durations. */
export const line: Settings.Line<Redacted.Redacted<string>, Duration.Duration> = {
  reveal,
  seal: (text) => Redacted.make(text),
  decodeDuration: (value) => {
    try {
      return Option.getOrUndefined(Duration.fromInput(value as Duration.Input))
    } catch {
      return undefined
    }
  },
  millis: Duration.millis,
  toMillis: Duration.toMillis,
  greaterThan: (a, b) => Duration.isGreaterThan(a, b)
}
