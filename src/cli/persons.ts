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
import { createInterface } from "node:readline"
import type { Readable } from "node:stream"
import { type CliError, usage } from "./outcome.js"

/** A line that names a person, or `undefined` for a blank line or a comment. */
export const personOfLine = (line: string): string | undefined => {
  const trimmed = line.trim()
  return trimmed.length === 0 || trimmed.startsWith("#") ? undefined : trimmed
}

const fileError = (path: string) => (error: unknown) =>
  usage(
    `cannot read ${path === "-" ? "standard input" : path}: ${(error as NodeJS.ErrnoException)?.code ?? String(error)}`
  )

const open = (path: string): Readable => path === "-" ? process.stdin : createReadStream(path)

/** The lines of a file (`-`: standard input) as they are, read one by one, never whole. */
export const linesOf = (path: string): Stream.Stream<string, CliError> =>
  Stream.suspend(() => {
    const lines = createInterface({ input: open(path), crlfDelay: Infinity })
    return Stream.fromAsyncIterable(lines, fileError(path)).pipe(Stream.ensuring(Effect.sync(() => lines.close())))
  })

/** The PersonUids of a file (`-`: standard input). */
export const fromFile = (path: string): Stream.Stream<string, CliError> =>
  Stream.filterMap(linesOf(path), (line) => Option.fromNullable(personOfLine(line)))

/** The persons named by arguments (`-` reads standard input there) and by `--persons-file`, in that order. */
export const fromArguments = (
  args: ReadonlyArray<string>,
  personsFile: string | undefined
): Stream.Stream<string, CliError> => {
  // Checked before anything is read or sent: a mistyped option must not go out as a PersonUid
  // (no PersonUid starts with "-"), and standard input can be read once.
  const option = args.find((arg) => arg.startsWith("-") && arg !== "-")
  if (option !== undefined) {
    return Stream.fail(usage(`unknown option ${/^-{1,2}[A-Za-z][A-Za-z-]*$/.test(option) ? option : "(hidden)"}`))
  }
  if (args.filter((arg) => arg === "-").length > 1) return Stream.fail(usage("- (standard input) may be given once"))
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
