/**
 * The whole client in one layer: settings, token cache, authenticate, and every person-data
 * operation (`PersonData`, and `MedicationService` as its typed view of medications).
 *
 * `layer` / `layerConfig` leave the `HttpTransport` to the application (that is what lets tests
 * swap in the in-memory one); `layerUndici` / `layerUndiciConfig` include the default undici
 * transport, so a backend needs a single `Effect.provide`.
 */
import * as Layer from "effect/Layer"
import * as ClinicalConfig from "./ClinicalConfig.js"
import type { InvalidConfig } from "./ClinicalError.js"
import * as HttpTransport from "./HttpTransport.js"
import * as MedicationService from "./MedicationService.js"
import * as PersonAuthentication from "./PersonAuthentication.js"
import * as PersonData from "./PersonData.js"
import * as TokenService from "./TokenService.js"

/** Everything the client layers provide. */
export type Services =
  | ClinicalConfig.ClinicalConfig
  | TokenService.TokenService
  | PersonAuthentication.PersonAuthentication
  | PersonData.PersonData
  | MedicationService.MedicationService

// The operations share one token cache and, through it, one bound on requests in flight.
const services = Layer.mergeAll(PersonAuthentication.layer, PersonData.layer, MedicationService.layer).pipe(
  Layer.provideMerge(TokenService.layer)
)

/** The client over the settings `config` provides and the transport the application provides. */
export const layerWith = <E>(
  config: Layer.Layer<ClinicalConfig.ClinicalConfig, E>
): Layer.Layer<Services, E, HttpTransport.HttpTransport> => services.pipe(Layer.provideMerge(config))

/** The client from an options object, over the transport the application provides. */
export const layer = (
  options: ClinicalConfig.Options
): Layer.Layer<Services, InvalidConfig, HttpTransport.HttpTransport> => layerWith(ClinicalConfig.layer(options))

/** The client from the environment (`CLINICAL_BASE_URL`, ...), over the transport the application provides. */
export const layerConfig: Layer.Layer<Services, InvalidConfig, HttpTransport.HttpTransport> = layerWith(
  ClinicalConfig.layerConfig
)

/** The client over `config`'s settings and the default undici transport with its network settings. */
const withUndici = (
  config: Layer.Layer<ClinicalConfig.ClinicalConfig, InvalidConfig>,
  agentOptions: HttpTransport.UndiciOptions | undefined
): Layer.Layer<Services, InvalidConfig> =>
  // The same `config` twice is built once: layers are shared within one build.
  layerWith(config).pipe(Layer.provide(HttpTransport.layerUndiciFromConfig(agentOptions)), Layer.provide(config))

/**
 * The client from an options object, ready to use: with the default undici transport, through the
 * proxy, CA and client certificate the options name (see `ClinicalConfig.Options`).
 */
export const layerUndici = (
  options: ClinicalConfig.Options,
  agentOptions?: HttpTransport.UndiciOptions
): Layer.Layer<Services, InvalidConfig> => withUndici(ClinicalConfig.layer(options), agentOptions)

/** The client from the environment, ready to use: with the default undici transport. */
export const layerUndiciConfig = (
  agentOptions?: HttpTransport.UndiciOptions
): Layer.Layer<Services, InvalidConfig> => withUndici(ClinicalConfig.layerConfig, agentOptions)
