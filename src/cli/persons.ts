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

/** The PersonUids of a file (`-`: standard input), read line by line, never whole. */
export const fromFile = (path: string): Stream.Stream<string, CliError> =>
  Stream.suspend(() => {
    const input = open(path)
    const lines = createInterface({ input, crlfDelay: Infinity })
    return Stream.fromAsyncIterable(lines, fileError(path)).pipe(
      Stream.filterMap((line) => Option.fromNullable(personOfLine(line))),
      Stream.ensuring(Effect.sync(() => lines.close()))
    )
  }) as Stream.Stream<string, CliError>

/** The persons named by arguments (`-` reads standard input there) and by `--persons-file`, in that order. */
export const fromArguments = (
  args: ReadonlyArray<string>,
  personsFile: string | undefined
): Stream.Stream<string, CliError> =>
  Stream.concat(
    Stream.flatMap(Stream.fromIterable(args), (arg) => (arg === "-" ? fromFile("-") : Stream.succeed(arg))),
    personsFile === undefined ? Stream.empty : fromFile(personsFile)
  )

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
