/**
 * The undici adapter of this line: the core's exchange (core/transport/undiciExchange.ts), its
 * outcome a `Result` handed to a callback (`dispatch`, which the call's common path sends through
 * without suspending a fiber), and `send`, the same as an Effect.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { Dispatcher } from "undici"
import type { Route } from "../../../../core/transport/connectFailure.js"
import type { Received } from "../../../../core/transport/message.js"
import type { Network } from "../../../../core/transport/network.js"
import { type Dispatching, Exchange, type Outgoing } from "../../../../core/transport/undiciExchange.js"
import { splitUrl } from "../../../../core/url.js"
import type { TransportError } from "../../ClinicalError.js"
import { sendableBody, transportError, type TransportRequest, type TransportResponse, wireHeaders } from "./wire.js"

/** A request in callback form: `done` is called once; the function returned aborts the request (then `done` is not called). */
export type Dispatch = (
  request: TransportRequest,
  done: (outcome: Result.Result<TransportResponse, TransportError>) => void
) => () => void

/** One exchange whose outcome goes to `done`. */
class Delivering extends Exchange {
  constructor(
    private readonly request: TransportRequest,
    route: Route | undefined,
    private readonly done: (outcome: Result.Result<TransportResponse, TransportError>) => void
  ) {
    super(request, route)
  }

  protected succeed(response: Received): void {
    this.done(Result.succeed(response))
  }

  protected fail(reason: TransportError["reason"], detail: string, requestSent: false | undefined): void {
    this.done(Result.fail(transportError(this.request, reason, detail, requestSent)))
  }

  protected outgoing(origin: string, path: string): Outgoing {
    const request = this.request
    return { origin, path, method: request.method, headers: wireHeaders(request), body: sendableBody(request) ?? null }
  }
}

/** `dispatch` as an Effect: interruption stops the timer and aborts the request on the socket. */
export const sendBy =
  (dispatch: Dispatch) => (request: TransportRequest): Effect.Effect<TransportResponse, TransportError> =>
    Effect.callback<TransportResponse, TransportError>((resume) => {
      const cancel = dispatch(
        request,
        (outcome) => resume(Result.isSuccess(outcome) ? Effect.succeed(outcome.success) : Effect.fail(outcome.failure))
      )
      return Effect.sync(cancel)
    })

/** Requests through an undici dispatcher: every request an exchange of its own. */
export const dispatchThrough = (agent: Pick<Dispatcher, "dispatch">): Dispatch => (request, done) =>
  new Delivering(request, undefined, done).start(agent as unknown as Dispatching, splitUrl(request.url))

/**
 * Requests through a {@link Network}'s dispatchers: each through its origin's (direct, or a
 * proxy's tunnel), and a failure to get there explained by the route (see `connectFailure`).
 */
export const dispatchOver = (network: Network): Dispatch => (request, done) => {
  const split = splitUrl(request.url)
  const { dispatcher, route } = network.routeOf(split.origin)
  return new Delivering(request, route, done).start(dispatcher as unknown as Dispatching, split)
}
