/**
 * The few combinators of an Effect that a runner written once in core performs its machine's
 * actions with (core/token/sharingRunner.ts). Effect 3 and Effect 4 give them under the same names
 * and argument order, so each line hands over its own `Effect` module (see {@link of}): the
 * runner's steps are then its line's own effects, with its fibers, interruption and tracing, and
 * core still imports no Effect.
 *
 * `F` is the line's effect type, opaque here: what a port's effect succeeds or fails with is said
 * in the port's documentation, and each line's suite runs the runner over its port.
 */
export interface Effects<F> {
  readonly succeed: (value: unknown) => F
  readonly fail: (error: unknown) => F
  readonly suspend: (evaluate: () => F) => F
  readonly flatMap: (self: F, f: (value: any) => F) => F
  readonly matchEffect: (
    self: F,
    cases: { readonly onFailure: (error: any) => F; readonly onSuccess: (value: any) => F }
  ) => F
  readonly andThen: (self: F, that: F) => F
  readonly as: (self: F, value: unknown) => F
  readonly sleep: (millis: number) => F
  readonly map: (self: F, f: (value: any) => unknown) => F
  readonly void: F
  /** Succeeds with `undefined` whatever `self` does. */
  readonly ignore: (self: F) => F
  readonly onError: (self: F, cleanup: (cause: unknown) => F) => F
  readonly tapError: (self: F, f: (error: any) => F) => F
  readonly logWarning: (message: string) => F
  readonly logInfo: (message: string) => F
  readonly logDebug: (message: string) => F
  readonly annotateLogs: (self: F, values: Record<string, unknown>) => F
  readonly annotateCurrentSpan: (values: Record<string, unknown>) => F
  /** `self`, then `cleanup` with its exit (`_tag` "Success" with `value`, or "Failure" with `cause`, in both lines). */
  readonly onExit: (self: F, cleanup: (exit: any) => F) => F
  readonly uninterruptible: (self: F) => F
  readonly interruptible: (self: F) => F
}

/**
 * A line's `Effect` module as {@link Effects} over its effect type. The combinators are dual
 * (data-first or data-last) and generic in both lines, which no single signature here can name:
 * the module is taken as it is, and only the data-first forms above are ever called.
 */
export const of = <F>(effectModule: object): Effects<F> => effectModule as Effects<F>

/**
 * Every name of {@link Effects}, for each line's test that its `Effect` module has them all (the
 * cast in {@link of} checks nothing).
 */
export const NAMES = [
  "succeed",
  "fail",
  "suspend",
  "flatMap",
  "matchEffect",
  "andThen",
  "as",
  "sleep",
  "map",
  "void",
  "ignore",
  "onError",
  "tapError",
  "logWarning",
  "logInfo",
  "logDebug",
  "annotateLogs",
  "annotateCurrentSpan",
  "onExit",
  "uninterruptible",
  "interruptible"
] as const satisfies ReadonlyArray<keyof Effects<unknown>>

// A name added to `Effects` and not to NAMES fails to compile here.
const everyName: [Exclude<keyof Effects<unknown>, (typeof NAMES)[number]>] extends [never] ? true : never = true
void everyName
