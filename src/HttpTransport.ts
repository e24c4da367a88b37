/**
 * The one thing the client needs from a network: send one request, get one response.
 *
 * Requests carry their secrets (`Authorization`, `ApplicationId`, a body holding a PersonUid) as
 * `Redacted` values; a transport reveals them only when it writes the bytes (`wireHeaders`,
 * `wireBody`). Interrupting `send` aborts the request on the socket.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ClinicalConfig from "./ClinicalConfig.js"
import type { InvalidConfig, TransportError } from "./ClinicalError.js"
import { fromHttpClient } from "./internal/transport/httpClient.js"
import { memory } from "./internal/transport/memory.js"
import * as Network from "./internal/transport/network.js"
import type { UndiciOptions } from "./internal/transport/network.js"
import type { Service, TransportRequest, TransportResponse } from "./internal/transport/port.js"
import { fromNetwork } from "./internal/transport/undici.js"
import { invalidArgument } from "./internal/transport/wire.js"

export { fromHttpClient } from "./internal/transport/httpClient.js"
export { make, memory } from "./internal/transport/memory.js"
export type { NetworkOptions, UndiciOptions } from "./internal/transport/network.js"
export type { Service, TransportRequest, TransportResponse, WireValue } from "./internal/transport/port.js"
export { fromUndiciAgent } from "./internal/transport/undici.js"
export {
  jsonResponse,
  neverConnected,
  transportError,
  wireBody,
  wireHeader,
  wireHeaders
} from "./internal/transport/wire.js"

/** The tag of the transport the client sends through. The application chooses the layer. */
export class HttpTransport extends Context.Tag("effect-clinical/HttpTransport")<HttpTransport, Service>() {}

/**
 * The default transport: undici called directly, on `Agent`s (keep-alive connection pools) that
 * this layer owns and closes with its scope. Skips `@effect/platform`'s HttpClient, which measured
 * about 3.7 times the client CPU per request of undici alone.
 *
 * Besides undici's `Agent` options it takes a proxy (by default the environment's `HTTPS_PROXY`,
 * `HTTP_PROXY`, `NO_PROXY`, as curl reads them; an https target is tunnelled with CONNECT), a CA to
 * trust besides Node's roots, and a client certificate: see {@link UndiciOptions}. A refused
 * option, or a file it names that cannot be read, fails the layer with `InvalidConfig`. undici is
 * loaded when the layer is built: importing the package (to use another transport, the mock, the
 * command line's help) does not load it.
 */
export const layerUndici = (options?: UndiciOptions): Layer.Layer<HttpTransport, InvalidConfig> =>
  Layer.scoped(HttpTransport, Effect.map(Network.acquire(options), fromNetwork))

/**
 * {@link layerUndici} over the network settings of the client's `ClinicalConfig` (its `proxy`,
 * `ca`, `clientCertificate`, `connections`, ...: `CLINICAL_PROXY`, `CLINICAL_CA_FILE`, ... from
 * the environment), undici's `agentOptions` on top. `ClinicalClient.layerUndici` and
 * `layerUndiciConfig` use it.
 */
export const layerUndiciFromConfig = (
  agentOptions?: UndiciOptions
): Layer.Layer<HttpTransport, InvalidConfig, ClinicalConfig.ClinicalConfig> =>
  Layer.unwrapEffect(
    Effect.map(
      ClinicalConfig.ClinicalConfig,
      (config) => layerUndici({ ...Network.optionsOf(config), ...agentOptions })
    )
  )

/**
 * A transport over the `@effect/platform` HttpClient the application provides (fetch, node, ...).
 * A `FetchHttpClient.RequestInit` provided where this layer is built (a dispatcher for a proxy or
 * mTLS, say) is used for every request, with `redirect: "manual"` on top.
 */
export const layerHttpClient: Layer.Layer<HttpTransport, never, HttpClient.HttpClient> = Layer.effect(
  HttpTransport,
  Effect.gen(function*() {
    const requestInit = yield* Effect.serviceOption(FetchHttpClient.RequestInit)
    return fromHttpClient(yield* HttpClient.HttpClient, Option.getOrUndefined(requestInit))
  })
)

/**
 * The in-memory transport for tests: every request goes to `handler`, nothing touches a network.
 * Use `wireHeaders` / `wireBody` in the handler to read what would have been sent.
 */
export const layerMemory = (
  handler: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Layer.Layer<HttpTransport, InvalidConfig> =>
  typeof handler === "function"
    ? Layer.succeed(HttpTransport, memory(handler))
    : Layer.fail(invalidArgument("handler", "must be a function from a request to an Effect of a response"))
