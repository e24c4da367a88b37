/**
 * `NodeRuntime.runMain`, reporting a failure the way a person wants to read it: the typed error's
 * message on one line, no Effect stack trace. `--stack` (or `CLINICAL_STACK=1`) prints Effect's
 * whole cause instead; a defect (a bug) always gets it.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Option } from "effect"

const wantsStack = process.argv.includes("--stack") || process.env.CLINICAL_STACK === "1"

const report = <E>(cause: Cause.Cause<E>) => {
  const failure = Cause.failureOption(cause)
  if (wantsStack || Option.isNone(failure)) {
    return Cause.isInterruptedOnly(cause) ? Effect.void : Console.error(Cause.pretty(cause))
  }
  const error = failure.value
  const message = error instanceof Error ? error.message : String(error)
  return Console.error(`error: ${message}\n(run with --stack for the full cause)`)
}

/**
 * Runs `program` as a Node program: exit code 0 on success, 1 on failure (130 on Ctrl-C).
 * `disablePrettyLogger` leaves the program's own loggers alone (runMain adds its pretty one).
 */
export const runMain = <A, E>(
  program: Effect.Effect<A, E>,
  options: { readonly disablePrettyLogger?: boolean } = {}
): void => NodeRuntime.runMain(Effect.tapErrorCause(program, report), { ...options, disableErrorReporting: true })
