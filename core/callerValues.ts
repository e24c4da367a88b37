/**
 * What a JavaScript caller of the Promise client hands over, recognised without trusting its type:
 * a logger's return value (a thenable to watch, or not), a call's signal (an AbortSignal, or not),
 * and the level name a logger is given for each level (each line hands over its levels' order).
 *
 * The recognisers read the value's properties, and a Proxy or a getter may throw from them: their
 * callers call them inside a `try` (the Promise client refuses such a signal, drops such a line).
 */
/** A thenable, as Promises/A+ defines it: an object or function with a `then` method. */
export const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  // Stryker disable next-line ConditionalExpression: equivalent, a primitive other than null and undefined has no then method
  (typeof value === "object" || typeof value === "function") && value !== null &&
  typeof (value as PromiseLike<unknown>).then === "function"

/**
 * An AbortSignal (from this realm or another)? Tagged as one, and with what a call uses of it: an
 * object with `aborted` and `addEventListener` alone, untagged, is most likely a mistake (it would
 * never fire). A look-alike that is tagged and has them all is taken, and is on its own.
 */
export const isAbortSignal = (value: unknown): value is AbortSignal =>
  Object.prototype.toString.call(value) === "[object AbortSignal]" &&
  typeof (value as AbortSignal).aborted === "boolean" &&
  typeof (value as AbortSignal).addEventListener === "function" &&
  typeof (value as AbortSignal).removeEventListener === "function"

/** A line's levels where a logger's names begin, and how the line orders its levels. */
export interface Levels<L> {
  readonly info: L
  readonly warn: L
  readonly error: L
  readonly lessThan: (a: L, b: L) => boolean
}

/** The level a logger is given: below Info (Trace, Debug) is "debug", Fatal is "error". */
export const levelName = <L>(
  level: L,
  { error, info, lessThan, warn }: Levels<L>
): "debug" | "info" | "warn" | "error" =>
  lessThan(level, info) ? "debug" : lessThan(level, warn) ? "info" : lessThan(level, error) ? "warn" : "error"
