/**
 * Where the command line reads PersonUids: arguments, a file (`--persons-file`), standard input
 * (`-`). A file holds one PersonUid per line; blank lines and lines starting with `#` are skipped.
 * A person's position (`index`, from 0) counts the PersonUids only.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"
import type { Readable } from "node:stream"
import { type CliError, usage } from "./outcome.js"
import { typed } from "./render.js"

/**
 * Longest line read whole, in bytes: a PersonUid is about 50 characters and a pass code at most
 * 256. A longer line is cut here (the rest is read past, never held), so that memory stays bounded
 * whatever the input; what is kept is longer than any value, so the line is refused as too long.
 */
export const MAX_LINE_BYTES = 4096

/** A line that names a person, or `undefined` for a blank line or a comment. A cut line is kept as it is, to be refused. */
export const personOfLine = (line: string): string | undefined => {
  if (Buffer.byteLength(line, "utf8") > MAX_LINE_BYTES) return line
  const trimmed = line.trim()
  return trimmed.length === 0 || trimmed.startsWith("#") ? undefined : trimmed
}

const fileError = (path: string) => (error: unknown) =>
  usage(
    `cannot read ${path === "-" ? "standard input" : typed(path)}: ${(error as NodeJS.ErrnoException)?.code ?? "error"}`
  )

const open = (path: string): Readable => path === "-" ? process.stdin : createReadStream(path)

/** A line's bytes as text, without the `\r` of a CRLF break. */
const textOf = (parts: ReadonlyArray<Buffer>, size: number): string => {
  const text = (parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)).toString("utf8")
  return text.endsWith("\r") ? text.slice(0, -1) : text
}

/**
 * The lines of `input` (split at `\n`, a `\r` before it dropped), each at most `max + 1` bytes:
 * the rest of a longer line is skipped as it streams by.
 */
export async function* boundedLines(input: AsyncIterable<Buffer>, max: number): AsyncGenerator<string> {
  let parts: Array<Buffer> = []
  let size = 0
  for await (const chunk of input) {
    let start = 0
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start)
      const end = newline === -1 ? chunk.length : newline
      const kept = Math.min(end - start, max + 1 - size)
      if (kept > 0) {
        parts.push(chunk.subarray(start, start + kept))
        size += kept
      }
      if (newline === -1) break
      yield textOf(parts, size)
      parts = []
      size = 0
      start = newline + 1
    }
  }
  if (size > 0) yield textOf(parts, size)
}

/** The lines of a file (`-`: standard input) as they are, read one by one, never whole, each at most {@link MAX_LINE_BYTES} (+1, cut). */
export const linesOf = (path: string): Stream.Stream<string, CliError> =>
  Stream.suspend(() => {
    const input = open(path)
    return Stream.fromAsyncIterable(boundedLines(input, MAX_LINE_BYTES), fileError(path)).pipe(
      Stream.ensuring(Effect.sync(() => {
        if (input !== process.stdin) input.destroy()
      }))
    )
  })

/** The PersonUids of a file (`-`: standard input). */
export const fromFile = (path: string): Stream.Stream<string, CliError> =>
  Stream.filterMap(linesOf(path), (line) => Option.fromNullable(personOfLine(line)))

/**
 * Why these PersonUid arguments cannot be used, checked before anything is read or sent: a
 * mistyped option must not go out as a PersonUid (no PersonUid starts with "-"), and standard
 * input can be read once. `@effect/cli` reads no option after a `-`: that one is named as such.
 */
export const argumentsRefusal = (args: ReadonlyArray<string>): CliError | undefined => {
  const at = args.findIndex((arg) => arg.startsWith("-") && arg !== "-")
  if (at >= 0) {
    const option = args[at]!
    const shown = /^-{1,2}[A-Za-z][A-Za-z-]*$/.test(option) ? option : "(hidden)"
    return usage(
      args.slice(0, at).includes("-")
        ? `${shown} after - is not read as an option: put the options before the PersonUids`
        : `unknown option ${shown}`
    )
  }
  return args.filter((arg) => arg === "-").length > 1 ? usage("- (standard input) may be given once") : undefined
}

/** The persons named by arguments (`-` reads standard input there) and by `--persons-file`, in that order. */
export const fromArguments = (
  args: ReadonlyArray<string>,
  personsFile: string | undefined
): Stream.Stream<string, CliError> => {
  const refused = argumentsRefusal(args)
  if (refused !== undefined) return Stream.fail(refused)
  return Stream.concat(
    Stream.flatMap(Stream.fromIterable(args), (arg) => (arg === "-" ? fromFile("-") : Stream.succeed(arg))),
    personsFile === undefined ? Stream.empty : fromFile(personsFile)
  )
}

/** The SHA-256 of a file's bytes, hex: what a checkpoint records of its input instead of the PersonUids. */
export const sha256OfFile = (path: string): Effect.Effect<string, CliError> =>
  Effect.async<string, CliError>((resume) => {
    const hash = createHash("sha256")
    const input = createReadStream(path)
    input.on("data", (chunk) => hash.update(chunk))
    input.on("error", (error) => resume(Effect.fail(fileError(path)(error))))
    input.on("end", () => resume(Effect.succeed(hash.digest("hex"))))
    return Effect.sync(() => input.destroy())
  })
