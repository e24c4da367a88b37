/**
 * Looking for secrets in real captured output of the Effect 3 line: log lines at every level, an
 * error's message, JSON, inspection and stack, a failure's cause. What counts as a leak (every
 * form a secret may be written in) is spec/secretForms.ts's, shared with the Effect 4 line.
 */
import { expect } from "@effect/vitest"
import { Cause, Exit, Inspectable, Layer, Logger, LogLevel } from "effect"
import { leakIn } from "../../spec/secretForms.js"

export { everyForm, FORMS, forms } from "../../spec/secretForms.js"

/** Fails the test if `text` holds any form of any of `secrets`, whole or a piece of 16 characters. */
export const expectNone = (label: string, text: string, secrets: ReadonlyArray<string>) => {
  // `expect` only on a find: called for every piece, it cost seconds per test.
  const leak = leakIn(text, secrets)
  if (leak !== undefined) expect.fail(`${label} leaks a secret (${leak}): ${text.slice(0, 2000)}`)
}

/** Fails the test if a failed exit holds a secret anywhere a user could print it. */
export const expectNoneInExit = (exit: Exit.Exit<unknown, unknown>, secrets: ReadonlyArray<string>) => {
  if (Exit.isSuccess(exit)) return
  expectNone("cause", Cause.pretty(exit.cause, { renderErrorCause: true }), secrets)
  expectNone("cause JSON", JSON.stringify(exit.cause), secrets)
  for (const error of Cause.failures(exit.cause)) {
    expectNone("String(error)", String(error), secrets)
    expectNone("JSON.stringify(error)", JSON.stringify(error), secrets)
    expectNone("inspect(error)", Inspectable.format(error), secrets)
    expectNone("error.stack", (error as Error).stack ?? "", secrets)
  }
}

/** Captures every log line, at every level, in two formats (logfmt and JSON). */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.zip(
    Logger.map(Logger.logfmtLogger, (line) => lines.push(line)),
    Logger.map(Logger.jsonLogger, (line) => lines.push(line))
  )
  const layer = Layer.merge(Logger.replace(Logger.defaultLogger, logger), Logger.minimumLogLevel(LogLevel.All))
  return { lines, layer }
}
