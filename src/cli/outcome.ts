/**
 * How a command ends: its exit code, decided from what it failed with (pure), and the one error
 * type of the command line's own.
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Option from "effect/Option"
import { stopReasonOf } from "../../core/batchTally.js"
import { isWrongKey } from "../../core/queue/queueMeta.js"
import { isRequestError } from "../ClinicalError.js"

/** The documented exit codes. */
export const ExitCode = {
  Success: 0,
  Failure: 1,
  /** A bad flag or argument, a missing or refused setting, an unreadable input file. */
  Usage: 2,
  /** A batch finished, but some persons failed or were skipped. */
  BatchIncomplete: 3,
  /** The token host refused the ApplicationId, or a data host refused a fresh token. */
  CredentialsRefused: 4,
  /** CLINICAL_SEALING_KEY is not the queue's key: it opens none of the queue's records. */
  KeyRefused: 5,
  /** Stopped by Ctrl-C (SIGINT) or SIGTERM. */
  Interrupted: 130
} as const

/**
 * A failure of the command line itself: its message (safe to print) and its exit code; `reported`
 * when the command already told the user (a batch's summary), so that it is not said twice.
 */
export class CliError extends Data.TaggedError("CliError")<{
  readonly message: string
  readonly code: number
  readonly reported?: boolean
}> {}

/** A usage error: exit code 2. */
export const usage = (message: string): CliError => new CliError({ message, code: ExitCode.Usage })

const isTagged = (error: unknown, tag: string): boolean =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === tag

/** The exit code of a failure. */
export const exitCodeOfError = (error: unknown): number => {
  if (error instanceof CliError) return error.code
  if (ValidationError.isValidationError(error)) return ExitCode.Usage
  if (isWrongKey(error)) return ExitCode.KeyRefused
  if (isTagged(error, "InvalidConfig") || isTagged(error, "InvalidRequest")) return ExitCode.Usage
  if (isRequestError(error) && stopReasonOf(error, 0, Number.MAX_SAFE_INTEGER) === "CredentialsRefused") {
    return ExitCode.CredentialsRefused
  }
  return ExitCode.Failure
}

/** The exit code of a whole run: interrupted, failed with an error, or died of a defect. */
export const exitCodeOfCause = (cause: Cause.Cause<unknown>): number => {
  if (Cause.isInterruptedOnly(cause)) return ExitCode.Interrupted
  return Option.match(Cause.failureOption(cause), {
    onNone: () => ExitCode.Failure,
    onSome: exitCodeOfError
  })
}

/** Whether a run failed with a typed error (rather than a defect alone). */
export const isTypedFailure = (cause: Cause.Cause<unknown>): boolean => Option.isSome(Cause.failureOption(cause))

/** What to print for a failure: the message of a typed error, the whole cause of a defect. */
export const describeCause = (cause: Cause.Cause<unknown>): string | undefined => {
  if (Cause.isInterruptedOnly(cause)) return undefined
  return Option.match(Cause.failureOption(cause), {
    onNone: () => Cause.pretty(cause),
    onSome: (error) =>
      // @effect/cli prints its own usage errors (with the help) already.
      ValidationError.isValidationError(error) || (error instanceof CliError && error.reported === true)
        ? undefined
        : error instanceof Error
        ? error.message
        : String(error)
  })
}

/** What a quoted piece of a usage message may show: an option's or a command's name, nothing typed after it. */
const NAME = /^(-{1,2}[A-Za-z][A-Za-z-]*|[a-z][a-z-]*)$/

/**
 * A usage message from `@effect/cli` with every quoted value but a name hidden: it quotes what the
 * user typed (`Received unknown argument: '--application-id=...'`, `Path '...' must exist`), and a
 * mistyped command line is exactly where a secret ends up as an argument. Quotes are paired across
 * the whole text; from the first pair that holds anything but a name (or a quote left unpaired: a
 * value that held one) to the last quote, everything is hidden, line breaks included.
 */
export const hideTypedValues = (text: string): string => {
  const quotes: Array<number> = []
  for (let at = text.indexOf("'"); at >= 0; at = text.indexOf("'", at + 1)) quotes.push(at)
  let from: number | undefined
  for (let pair = 0; pair + 1 < quotes.length && from === undefined; pair += 2) {
    if (!NAME.test(text.slice(quotes[pair]! + 1, quotes[pair + 1]!))) from = quotes[pair]!
  }
  if (from === undefined && quotes.length % 2 === 1) from = quotes[quotes.length - 1]!
  if (from === undefined) return text
  const to = quotes[quotes.length - 1]!
  return to > from ? `${text.slice(0, from)}'<hidden>'${text.slice(to + 1)}` : `${text.slice(0, from)}'<hidden>`
}
