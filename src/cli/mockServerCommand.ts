/**
 * `effect-clinical mock-server`: the built-in mock served on loopback until stopped; the mock and
 * its HTTP server loaded when it runs.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { fileURLToPath } from "node:url"
import { createNew } from "../../core/files.js"
import { readSettingFile } from "../../core/settingFile.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { optional } from "./queue.js"
import * as Render from "./render.js"

const MockClinicalServer = Effect.promise(() => import("../testing/MockClinicalServer.js"))

/**
 * How to run this command line where it runs now, from the path of this module: installed (under
 * node_modules, `npx` finds it), or in the library's own checkout (its `cli` script).
 */
export const commandLineHere = (modulePath: string): string =>
  modulePath.split(/[\\/]/).includes("node_modules") ? "npx effect-clinical" : "npm run -s cli --"

/**
 * The mock's certificate and key from `--tls-cert` and `--tls-key` (PEM files; both or neither), or
 * the usage error naming the flag (never a file's text).
 */
const tlsOf = (
  cert: Option.Option<string>,
  key: Option.Option<string>
): Effect.Effect<{ readonly cert: string; readonly key: string } | undefined, CliError> => {
  if (Option.isNone(cert) && Option.isNone(key)) return Effect.succeed(undefined)
  if (Option.isNone(cert) || Option.isNone(key)) {
    return Effect.fail(usage("--tls-cert and --tls-key go together: the certificate and its key"))
  }
  const certFile = readSettingFile("--tls-cert", cert.value)
  if (!certFile.ok) return Effect.fail(usage(`--tls-cert ${certFile.reason}`))
  const keyFile = readSettingFile("--tls-key", key.value)
  if (!keyFile.ok) return Effect.fail(usage(`--tls-key ${keyFile.reason}`))
  return Effect.succeed({ cert: certFile.value.toString("utf8"), key: keyFile.value.toString("utf8") })
}

/** The persons mock-server lists; the rest go to `--persons-out`. */
const SHOWN_PERSONS = 3

/** The PersonUids, one a line, into a new owner-only file (never through a link planted there). */
const writePersonUids = (path: string, persons: ReadonlyArray<{ readonly personUid: string }>) =>
  Effect.tryPromise({
    try: async () => {
      const handle = await createNew(path)
      try {
        await handle.writeFile(persons.map((person) => person.personUid).join("\n") + "\n")
      } finally {
        await handle.close()
      }
    },
    catch: (cause) =>
      usage(
        `--persons-out cannot be created (${
          (cause as { readonly code?: unknown }).code ?? "error"
        }): it must be a new file`
      )
  })

export const mockServer = Command.make("mock-server", {
  port: optional(Options.integer("port"), "port on 127.0.0.1 (default: PORT, else any free one)"),
  tlsCert: optional(
    Options.text("tls-cert"),
    "serve HTTPS with this certificate (PEM file, naming localhost), with --tls-key"
  ),
  tlsKey: optional(Options.text("tls-key"), "the certificate's private key (PEM file)"),
  persons: optional(
    Options.integer("persons"),
    "serve N made-up persons (the same N every time) instead of the 3 fixture persons"
  ),
  personsOut: optional(
    Options.text("persons-out"),
    "write the PersonUids it serves to this new file, one a line (owner-only): a persons file"
  )
}, ({ persons, personsOut, port, tlsCert, tlsKey }) =>
  Effect.gen(function*() {
    const chosen = Option.getOrElse(port, () => Number(process.env.PORT ?? "0"))
    if (!Number.isInteger(chosen) || chosen < 0 || chosen > 65535) {
      return yield* Effect.fail(usage(`the port must be an integer from 0 to 65535`))
    }
    const tls = yield* tlsOf(tlsCert, tlsKey)
    const { demoApplicationId, generatedPersons, make, serve } = yield* MockClinicalServer
    const made = yield* Option.match(persons, {
      onNone: () => Effect.succeed(undefined),
      onSome: (count) =>
        Effect.try({
          try: () => generatedPersons(count),
          catch: (cause) => usage(`--persons: ${(cause as Error).message}`)
        })
    })
    const mock = yield* make(made === undefined ? {} : { persons: made })
    if (Option.isSome(personsOut)) yield* writePersonUids(personsOut.value, mock.persons)
    const baseUrl = yield* serve(mock, { port: chosen, tls }).pipe(
      Effect.mapError(() =>
        new CliError({
          message: tls === undefined
            ? `cannot listen on 127.0.0.1:${chosen} (is the port in use?)`
            : `cannot serve HTTPS on 127.0.0.1:${chosen} (is the port in use, or are the certificate and key not a pair?)`,
          code: ExitCode.Failure
        })
      )
    )
    yield* Console.log(`Mock clinical service listening at ${baseUrl}`)
    yield* Console.log(`Demo ApplicationId (the mock's own, not a credential): ${demoApplicationId}`)
    yield* Console.log("Fixture persons (PersonUid, PassCode, date of birth):")
    for (const person of mock.persons.slice(0, SHOWN_PERSONS)) {
      yield* Console.log(`  ${person.displayName}: ${person.personUid}  ${person.passCode}  ${person.dateOfBirth}`)
    }
    if (mock.persons.length > SHOWN_PERSONS) {
      yield* Console.log(
        `  ... and ${mock.persons.length - SHOWN_PERSONS} more` +
          (Option.isSome(personsOut)
            ? ` (every PersonUid in ${Render.printable(personsOut.value)})`
            : " (--persons-out F lists them)")
      )
    }
    yield* Console.log(
      `\nTry, in another terminal: CLINICAL_BASE_URL=${baseUrl} \\\n` +
        `  CLINICAL_APPLICATION_ID=${demoApplicationId} \\\n` +
        // Over HTTPS the client trusts the CA that signed the certificate (the certificate itself, if self-signed).
        (tls === undefined ? "" : "  CLINICAL_CA_FILE=<the CA's PEM file> \\\n") +
        `  ${commandLineHere(fileURLToPath(import.meta.url))} medications ${mock.persons[0]!.personUid}`
    )
    return yield* Effect.never
  }).pipe(Effect.scoped)).pipe(
    Command.withDescription(
      "Serve the built-in mock service on loopback until stopped (Ctrl-C).\nExample: effect-clinical mock-server --port 8080"
    )
  )
