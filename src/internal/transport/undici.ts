/** The undici adapter of this line: the core's exchange (core/transport/undiciExchange.ts), its outcome an `Either`. */
import * as Either from "effect/Either"
import type { Dispatcher } from "undici"
import type { Route } from "../../../core/transport/connectFailure.js"
import { pair } from "../../../core/transport/dispatchPairs.js"
import type { Received } from "../../../core/transport/message.js"
import { type Dispatching, Exchange, type Outgoing } from "../../../core/transport/undiciExchange.js"
import { splitUrl } from "../../../core/url.js"
import type { TransportError } from "../../ClinicalError.js"
import { callback } from "../call/callback.js"
import type { Network } from "./network.js"
import type { Service, TransportRequest, TransportResponse } from "./port.js"
import { sendableBody, transportError, wireHeaders } from "./wire.js"

/** One exchange whose outcome goes to `done` (see `port.ts`'s `dispatch`). */
class Delivering extends Exchange {
  constructor(
    private readonly request: TransportRequest,
    route: Route | undefined,
    private readonly done: (outcome: Either.Either<TransportResponse, TransportError>) => void
  ) {
    super(request, route)
  }

  protected succeed(response: Received): void {
    this.done(Either.right(response))
  }

  protected fail(reason: TransportError["reason"], detail: string, requestSent: false | undefined): void {
    this.done(Either.left(transportError(this.request, reason, detail, requestSent)))
  }

  protected outgoing(origin: string, path: string): Outgoing {
    const request = this.request
    return { origin, path, method: request.method, headers: wireHeaders(request), body: sendableBody(request) ?? null }
  }
}

/** A transport over `dispatch`, the callback form of a request. */
const fromDispatch = (dispatch: NonNullable<Service["dispatch"]>): Service => ({
  dispatch,
  // Interruption stops the timer and aborts the request on the socket.
  send: pair((request) => callback<TransportResponse, TransportError>((resume) => dispatch(request, resume)))
})

/** A transport over an undici dispatcher: every request an exchange of its own. */
export const fromUndiciAgent = (agent: Pick<Dispatcher, "dispatch">): Service =>
  fromDispatch((request, done) =>
    new Delivering(request, undefined, done).start(agent as unknown as Dispatching, splitUrl(request.url))
  )

/**
 * A transport over a {@link Network}'s dispatchers: each request through its origin's (direct, or
 * a proxy's tunnel), and a failure to get there explained by the route (see `connectFailure`).
 */
export const fromNetwork = (network: Network): Service =>
  fromDispatch((request, done) => {
    const split = splitUrl(request.url)
    const { dispatcher, route } = network.routeOf(split.origin)
    return new Delivering(request, route, done).start(dispatcher as unknown as Dispatching, split)
  })
