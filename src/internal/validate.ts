/**
 * The checks of core/validate.ts as this line's `Either` (the clean value, or a reason written to be
 * shown to a user, never the value itself), and what only Effect can read: a `Redacted` value, a
 * `Duration`.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
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

/** The short forms people type: `30s`, `2m`, `1500ms`, `1h`, `1d` (decimals allowed: `1.5s`). */
const SHORT_DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/i

const UNIT_MILLIS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A duration: anything Effect's `Duration` reads (`"10 seconds"`, a number of milliseconds, a
 * `Duration`) or a short form (`30s`, `2m`, `1500ms`). A bare number in text is refused: it would
 * be unclear whether it meant seconds or milliseconds.
 */
export const duration = (value: unknown): Either.Either<Duration.Duration, string> => {
  const refusal = "must be a duration, e.g. \"30s\", \"2m\", \"1500ms\" or \"10 seconds\""
  // Duration clamps negative numbers to zero; a negative setting is a mistake worth naming.
  if (typeof value === "number" && value < 0) return Either.left("must not be negative")
  if (typeof value === "number" && Number.isNaN(value)) return Either.left(refusal)
  if (typeof value === "string") {
    const short = SHORT_DURATION.exec(value.trim())
    if (short !== null) return Either.right(Duration.millis(Number(short[1]) * UNIT_MILLIS[short[2]!.toLowerCase()]!))
    if (/^\s*-/.test(value)) return Either.left("must not be negative")
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Either.left(`${refusal}: a bare number needs a unit`)
  }
  return Option.match(Duration.decodeUnknown(value), {
    onNone: () => Either.left(refusal),
    onSome: Either.right
  })
}
