/**
 * The checks of core/validate.ts as this line's `Either` (the clean value, or a reason written to be
 * shown to a user, never the value itself), and what only Effect can read: a `Redacted` value, a
 * `Duration`.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Settings from "../../core/config/settings.js"
import * as Core from "../../core/validate.js"

export {
  formatDay,
  isoDay,
  MAX_PASS_CODE_LENGTH,
  MAX_PERSON_UID_LENGTH,
  MAX_TOKEN_LENGTH,
  positiveInteger
} from "../../core/validate.js"

/** A core check's outcome as an `Either`. */
export const fromChecked = <A>(checked: Core.Checked<A>): Either.Either<A, string> =>
  checked.ok ? Either.right(checked.value) : Either.left(checked.reason)

/** A core check as one that gives an `Either`. */
const lift =
  <Args extends ReadonlyArray<unknown>, A>(check: (...args: Args) => Core.Checked<A>) =>
  (...args: Args): Either.Either<A, string> => fromChecked(check(...args))

export const guid = lift(Core.guid)
export const integer = (min: number, max: number) => lift(Core.integer(min, max))
export const share = lift(Core.share)
export const boolean = lift(Core.boolean)
export const visibleAscii = lift(Core.visibleAscii)
export const day = lift(Core.day)
export const calendarDate = lift(Core.calendarDate)
export const dayFormat = lift(Core.dayFormat)
export const printable = lift(Core.printable)
export const baseUrl = lift(Core.baseUrl)
export const urlPath = lift(Core.urlPath)

/**
 * Reads a value that may be `Redacted` without ever logging it. Something that only looks like a
 * `Redacted` (Effect holds no value for it) reads as `undefined`, which every check refuses.
 */
export const reveal = (value: unknown): unknown => {
  if (!Redacted.isRedacted(value)) return value
  try {
    return Redacted.value(value)
  } catch {
    return undefined
  }
}

/** How this line holds secrets and durations, for the core's readings of settings. */
export const line: Settings.Line<Redacted.Redacted<string>, Duration.Duration> = {
  reveal,
  seal: (text) => Redacted.make(text),
  decodeDuration: (value) => Option.getOrUndefined(Duration.decodeUnknown(value)),
  millis: Duration.millis,
  toMillis: Duration.toMillis,
  greaterThan: (a, b) => Duration.greaterThan(a, b)
}

/**
 * A duration: anything Effect's `Duration` reads (`"10 seconds"`, a number of milliseconds, a
 * `Duration`) or a short form (`30s`, `2m`, `1500ms`); see the core's.
 */
export const duration = (value: unknown): Either.Either<Duration.Duration, string> =>
  fromChecked(Settings.duration(value, line))
