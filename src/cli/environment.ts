/**
 * Where the command line's settings come from: the `CLINICAL_*` environment, and an `--env-file`
 * for what the environment does not set (the environment wins, as with dotenv). Never argv: no
 * flag takes the ApplicationId, a pass code or a token, so none lands in shell history or `ps`.
 */
import * as Options from "@effect/cli/Options"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { readFile } from "node:fs/promises"
import { parseEnv } from "node:util"
import * as ClinicalClient from "../ClinicalClient.js"
import { type CliError, usage } from "./outcome.js"

/** `--env-file F`: settings in dotenv form (`CLINICAL_BASE_URL=...`), for what the environment does not set. */
export const envFile = Options.file("env-file", { exists: "yes" }).pipe(
  Options.withDescription("read CLINICAL_* settings from this file too (the environment wins)"),
  Options.optional
)

/** The settings' source: the environment, then the file. */
export const configProvider = (file: Option.Option<string>): Effect.Effect<ConfigProvider.ConfigProvider, CliError> =>
  Option.match(file, {
    onNone: () => Effect.succeed(ConfigProvider.fromEnv()),
    onSome: (path) =>
      Effect.tryPromise({
        try: () => readFile(path, "utf8"),
        catch: (error) => usage(`cannot read --env-file ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}`)
      }).pipe(Effect.map((text) => {
        const fromFile = new Map(
          Object.entries(parseEnv(text)).flatMap(([name, value]) => value === undefined ? [] : [[name, value]])
        )
        return ConfigProvider.fromEnv().pipe(ConfigProvider.orElse(() => ConfigProvider.fromMap(fromFile)))
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
