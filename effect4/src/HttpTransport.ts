/**
 * The one thing the client needs from a network: send one request, get one response.
 *
 * Requests carry their secrets (`Authorization`, `ApplicationId`, a body holding a PersonUid) as
 * `Redacted` values; a transport reveals them only when it writes the bytes (`wireHeaders`,
 * `wireBody`). Interrupting `send` aborts the request on the socket.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import type { Dispatcher } from "undici"
import { pair } from "../../core/transport/dispatchPairs.js"
import { exceedsLimit, hasTimeout } from "../../core/transport/failures.js"
import type { Network } from "../../core/transport/network.js"
import * as ClinicalConfig from "./ClinicalConfig.js"
import type { InvalidConfig, TransportError } from "./ClinicalError.js"
import { fromHttpClient } from "./internal/transport/httpClient.js"
import * as NetworkShell from "./internal/transport/network.js"
import type { UndiciOptions } from "./internal/transport/network.js"
import { type Dispatch, dispatchOver, dispatchThrough, sendBy } from "./internal/transport/undici.js"
import {
  invalidArgument,
  timedOutError,
  tooLarge,
  transportError,
  type TransportRequest,
  type TransportResponse
} from "./internal/transport/wire.js"

export { fromHttpClient } from "./internal/transport/httpClient.js"
export type { NetworkOptions, UndiciOptions } from "./internal/transport/network.js"
export {
  jsonResponse,
  transportError,
  type TransportRequest,
  type TransportResponse,
  wireBody,
  wireHeader,
  wireHeaders,
  type WireValue
} from "./internal/transport/wire.js"

/** A transport: sends one request; fails only when no usable HTTP response was received. */
export interface Service {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
  /**
   * The same send in callback form, offered by a transport that has one natively (the undici
   * transport): `done` is called once, with the response or the failure; calling the function
   * returned aborts the request, and `done` is then not called. The client's common path sends
   * through it without suspending a fiber; a transport without it is sent through `send`.
   */
  readonly dispatch?: Dispatch
}

/** The transport the client sends through. The application chooses the layer. */
export class HttpTransport extends Context.Service<HttpTransport, Service>()("effect-clinical/HttpTransport") {}

/** Bounds `effect` by the request's `timeoutMillis` on Effect's `Clock` (so `TestClock` drives it). */
const withTimeout = <E>(
  request: TransportRequest,
  effect: Effect.Effect<TransportResponse, E>
): Effect.Effect<TransportResponse, E | TransportError> =>
  hasTimeout(request)
    ? Effect.timeoutOrElse(effect, {
      duration: request.timeoutMillis,
      orElse: () => Effect.fail(timedOutError(request))
    })
    : effect

/**
 * A transport from a plain send function: adds the request's `timeoutMillis` (on Effect's `Clock`)
 * and `maxResponseBytes`, so that a custom transport only has to send.
 */
export const make = (
  send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Service => {
  if (typeof send !== "function") throw invalidArgument("send", "must be a function from a request to an Effect")
  return HttpTransport.of({
    send: (request) => {
      // A JavaScript caller's send may return a Promise or nothing: say so, rather than die.
      const sent: unknown = send(request)
      if (!Effect.isEffect(sent)) {
        return Effect.fail(transportError(request, "Network", "the transport's send did not return an Effect"))
      }
      return withTimeout(
        request,
        Effect.flatMap(
          sent as Effect.Effect<TransportResponse, TransportError>,
          (response) =>
            request.maxResponseBytes !== undefined && exceedsLimit(request, Buffer.byteLength(response.body))
              ? Effect.fail(tooLarge(request, request.maxResponseBytes))
              : Effect.succeed(response)
        )
      )
    }
  })
}

/**
 * The in-memory transport for tests: every request goes to `handler`, nothing touches a network.
 * Use `wireHeaders` / `wireBody` in the handler to read what would have been sent.
 */
export const layerMemory = (
  handler: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Layer.Layer<HttpTransport, InvalidConfig> =>
  typeof handler === "function"
    ? Layer.succeed(HttpTransport, make(handler))
    : Layer.effect(
      HttpTransport,
      Effect.fail(invalidArgument("handler", "must be a function from a request to an Effect of a response"))
    )

/**
 * A transport over the `effect/http` HttpClient the application provides (fetch, node, ...). A
 * `FetchHttpClient.RequestInit` provided where this layer is built (a dispatcher for a proxy or a
 * private CA, say) applies to every request; redirects are never followed.
 */
export const layerHttpClient: Layer.Layer<HttpTransport, never, HttpClient.HttpClient> = Layer.effect(
  HttpTransport,
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    return HttpTransport.of(
      fromHttpClient(yield* HttpClient.HttpClient, Context.getOrUndefined(context, FetchHttpClient.RequestInit))
    )
  })
)

/** A transport over `dispatch`, the callback form of a request, and `send`, the same as an Effect. */
const fromDispatch = (dispatch: Dispatch): Service => HttpTransport.of({ dispatch, send: pair(sendBy(dispatch)) })

/** A transport over an undici dispatcher the application owns. */
export const fromUndiciAgent = (agent: Pick<Dispatcher, "dispatch">): Service => fromDispatch(dispatchThrough(agent))

/** A transport over a network's dispatchers: each request through its origin's, a failure explained by its route. */
const fromNetwork = (network: Network): Service => fromDispatch(dispatchOver(network))

/**
 * The default transport: undici called directly, on `Agent`s (keep-alive connection pools) that
 * this layer owns and closes with its scope.
 *
 * Besides undici's `Agent` options it takes a proxy (by default the environment's `HTTPS_PROXY`,
 * `HTTP_PROXY`, `NO_PROXY`, as curl reads them; an https target is tunnelled with CONNECT), a CA to
 * trust besides Node's roots, and a client certificate: see {@link UndiciOptions}. A refused
 * option, or a file it names that cannot be read, fails the layer with `InvalidConfig`. undici is
 * loaded when the layer is built.
 */
export const layerUndici = (options?: UndiciOptions): Layer.Layer<HttpTransport, InvalidConfig> =>
  Layer.effect(HttpTransport, Effect.map(NetworkShell.acquire(options), fromNetwork))

/**
 * {@link layerUndici} over the network settings of the client's `ClinicalConfig` (its `proxy`,
 * `ca`, `clientCertificate`, `connections`, ...), undici's `agentOptions` on top.
 */
export const layerUndiciFromConfig = (
  agentOptions?: UndiciOptions
): Layer.Layer<HttpTransport, InvalidConfig, ClinicalConfig.ClinicalConfig> =>
  Layer.unwrap(
    ClinicalConfig.ClinicalConfig.useSync((config) =>
      layerUndici({ ...NetworkShell.optionsOf(config), ...agentOptions })
    )
  )
