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
  /** `self`, with `cleanup` run when it is interrupted (its argument, the interruptors, differs by line). */
  readonly onInterrupt: (self: F, cleanup: (interruptors: unknown) => F) => F
  /** Succeeds with what `evaluate` returns. */
  readonly sync: (evaluate: () => unknown) => F
}

/**
 * A line's `Effect` module as {@link Effects} over its effect type. The combinators are dual
 * (data-first or data-last) and generic in both lines, which no single signature here can name:
 * the module is taken as it is, and only the data-first forms above are ever called.
 */
export const of = <F>(effectModule: object): Effects<F> => effectModule as Effects<F>

/** The `Deferred` operations of a line, over its effect type `F` and its deferred `D`. */
export interface Deferreds<F, D> {
  /** Succeeds with a new `D`. */
  readonly make: () => F
  readonly await: (deferred: D) => F
  readonly succeed: (deferred: D, value: unknown) => F
  readonly failCause: (deferred: D, cause: unknown) => F
}

/**
 * The modules of a line that core's runners take as they are: Effect 3 and Effect 4 give what is
 * used of them under the same names and argument order ({@link MODULE_NAMES}).
 */
export interface Modules {
  readonly Effect: object
  readonly Clock: object
  readonly Random: object
  readonly Deferred: object
  readonly Redacted: object
}

/** What every runner of core has of its line alike, read from the line's {@link Modules}. */
export interface Common<F, S> {
  readonly effects: Effects<F>
  /** Succeeds with the wall clock's ms. */
  readonly now: F
  /** Succeeds with a random number in [0, 1). */
  readonly random: F
  readonly deferreds: Deferreds<F, any>
  /** A secret's text. */
  readonly reveal: (secret: S) => string
  /** A text as a secret. */
  readonly secret: (text: string) => S
}

/** {@link Common} from a line's modules (each a cast, as in {@link of}; spec/effects.ts checks the names). */
export const common = <F, S>(modules: Modules): Common<F, S> => {
  const { Clock, Deferred, Random, Redacted } = modules as Record<keyof Modules, any>
  return {
    effects: of<F>(modules.Effect),
    now: Clock.currentTimeMillis,
    random: Random.next,
    deferreds: Deferred as Deferreds<F, any>,
    reveal: Redacted.value,
    secret: Redacted.make
  }
}

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
  "interruptible",
  "onInterrupt",
  "sync"
] as const satisfies ReadonlyArray<keyof Effects<unknown>>

// A name added to `Effects` and not to NAMES fails to compile here.
const everyName: [Exclude<keyof Effects<unknown>, (typeof NAMES)[number]>] extends [never] ? true : never = true
void everyName

/** The names {@link common} reads of each module but `Effect` (whose are {@link NAMES}). */
export const MODULE_NAMES = {
  Clock: ["currentTimeMillis"],
  Random: ["next"],
  Deferred: ["make", "await", "succeed", "failCause"],
  Redacted: ["make", "value"]
} as const
