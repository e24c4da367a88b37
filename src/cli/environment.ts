/**
 * Where the command line's settings come from: the `CLINICAL_*` environment, and a
 * `--settings-file` for what the environment does not set (the environment wins, as with dotenv).
 * Never argv: no flag takes the ApplicationId, a pass code or a token, so none lands in shell
 * history or `ps`. Not `--env-file`: that is Node's own option, which Node 20 reads wherever it
 * stands on the command line (nodejs/node#54232), `NODE_OPTIONS` lines included, before any code of
 * ours runs.
 */
import * as Options from "@effect/cli/Options"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { readFile, stat } from "node:fs/promises"
import { parseEnv } from "node:util"
import * as ClinicalClient from "../ClinicalClient.js"
import * as ClinicalConfig from "../ClinicalConfig.js"
import { type CliError, usage } from "./outcome.js"
import { printable, typed } from "./render.js"

/** `--settings-file F`: settings in dotenv form (`CLINICAL_BASE_URL=...`), for what the environment does not set. */
export const settingsFile = Options.file("settings-file").pipe(
  Options.withDescription("read CLINICAL_* settings from this file too (dotenv form; the environment wins)"),
  Options.optional
)

/** Largest settings file read: a few dozen lines of settings, not a file read whole into memory by mistake. */
const MAX_SETTINGS_BYTES = 1024 * 1024

/** A warning on stderr for each variable (of the environment or the file) that looks like a mistyped setting. */
const warnMisspelled = (names: Iterable<string>): Effect.Effect<void> =>
  Effect.forEach(
    ClinicalConfig.misspellingWarnings(names),
    (warning) => Console.error(`warning: ${printable(warning)}`),
    { discard: true }
  )

/** The settings' source: the environment, then the file. */
export const configProvider = (file: Option.Option<string>): Effect.Effect<ConfigProvider.ConfigProvider, CliError> =>
  Effect.tap(sourceOf(file), ({ names }) => warnMisspelled(names)).pipe(Effect.map(({ provider }) => provider))

const sourceOf = (
  file: Option.Option<string>
): Effect.Effect<{ readonly provider: ConfigProvider.ConfigProvider; readonly names: Array<string> }, CliError> =>
  Option.match(file, {
    onNone: () => Effect.succeed({ provider: ConfigProvider.fromEnv(), names: Object.keys(process.env) }),
    onSome: (path) =>
      Effect.tryPromise({
        try: async () => {
          if ((await stat(path)).size > MAX_SETTINGS_BYTES) return undefined
          return readFile(path, "utf8")
        },
        catch: (error) =>
          usage(`cannot read --settings-file ${typed(path)}: ${(error as NodeJS.ErrnoException).code ?? "error"}`)
      }).pipe(Effect.flatMap((text) => {
        if (text === undefined) {
          return Effect.fail(usage(`--settings-file ${typed(path)} is larger than 1 MiB: it is no settings file`))
        }
        const fromFile = new Map(
          Object.entries(parseEnv(text)).flatMap(([name, value]) => value === undefined ? [] : [[name, value]])
        )
        return Effect.succeed({
          provider: ConfigProvider.fromEnv().pipe(ConfigProvider.orElse(() => ConfigProvider.fromMap(fromFile))),
          names: [...Object.keys(process.env), ...fromFile.keys()]
        })
      }))
  })

/** `layer` with its settings read from the environment (and the file). */
export const withSettings = <A, E>(
  file: Option.Option<string>,
  layer: Layer.Layer<A, E>
): Layer.Layer<A, E | CliError> =>
  Layer.unwrapEffect(
    Effect.map(configProvider(file), (provider) => layer.pipe(Layer.provide(Layer.setConfigProvider(provider))))
  )

/** The whole client over undici, its settings from the environment (and the file). */
export const client = (file: Option.Option<string>) => withSettings(file, ClinicalClient.layerUndiciConfig())
