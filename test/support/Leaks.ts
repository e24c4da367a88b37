/**
 * Looking for secrets in real captured output: log lines at every level, an error's message,
 * JSON, inspection and stack, a failure's cause. A secret counts as leaked in any form a server or
 * a logger could write it: any letter case, a GUID without hyphens, JSON-escaped, percent-encoded.
 */
import { expect } from "@effect/vitest"
import { Cause, Exit, Inspectable, Layer, Logger, LogLevel } from "effect"

/** Every form of `secret` worth looking for (compared case-insensitively). */
export const forms = (secret: string): ReadonlyArray<string> => {
  const all = new Set([
    secret,
    secret.replace(/-/g, ""),
    JSON.stringify(secret).slice(1, -1).replace(/\//g, "\\/"),
    JSON.stringify(secret).slice(1, -1).replace(/\+/g, "\\u002b"),
    encodeURIComponent(secret)
  ])
  return [...all].filter((form) => form.length >= 8)
}

/** Pieces this long of a secret's form count as a leak: a secret cut at a boundary still leaks. */
const PIECE = 16

/** The form itself, and every piece of it {@link PIECE} characters long. */
const pieces = (form: string): ReadonlyArray<string> =>
  form.length <= PIECE ? [form] : Array.from({ length: form.length - PIECE + 1 }, (_, i) => form.slice(i, i + PIECE))

/** Fails the test if `text` holds any form of any of `secrets`, whole or a piece of 16 characters. */
export const expectNone = (label: string, text: string, secrets: ReadonlyArray<string>) => {
  const lower = text.toLowerCase()
  for (const secret of secrets) {
    for (const form of forms(secret)) {
      for (const piece of pieces(form.toLowerCase())) {
        expect(lower.includes(piece), `${label} leaks a secret (${piece} of ${form}): ${text.slice(0, 2000)}`).toBe(
          false
        )
      }
    }
  }
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
