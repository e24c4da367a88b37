/** The undici adapter of this line: the core's exchange (core/transport/undiciExchange.ts), its outcome an Effect. */
import * as Effect from "effect/Effect"
import type { Dispatcher } from "undici"
import type { Route } from "../../../../core/transport/connectFailure.js"
import type { Received } from "../../../../core/transport/message.js"
import { type Dispatching, Exchange, type Outgoing } from "../../../../core/transport/undiciExchange.js"
import { splitUrl } from "../../../../core/url.js"
import type { TransportError } from "../../ClinicalError.js"
import { sendableBody, transportError, type TransportRequest, type TransportResponse, wireHeaders } from "./wire.js"

/** One exchange whose outcome resumes a waiting fiber. */
class Resuming extends Exchange {
  constructor(
    private readonly request: TransportRequest,
    route: Route | undefined,
    private readonly resume: (effect: Effect.Effect<TransportResponse, TransportError>) => void
  ) {
    super(request, route)
  }

  protected succeed(response: Received): void {
    this.resume(Effect.succeed(response))
  }

  protected fail(reason: TransportError["reason"], detail: string, requestSent: false | undefined): void {
    this.resume(Effect.fail(transportError(this.request, reason, detail, requestSent)))
  }

  protected outgoing(origin: string, path: string): Outgoing {
    const request = this.request
    return { origin, path, method: request.method, headers: wireHeaders(request), body: sendableBody(request) ?? null }
  }
}

/** Sends `request` through `agent`; interruption stops the timer and aborts the request on the socket. */
export const sendThrough = (
  agent: Pick<Dispatcher, "dispatch">,
  request: TransportRequest,
  route?: Route
): Effect.Effect<TransportResponse, TransportError> =>
  Effect.callback<TransportResponse, TransportError>((resume) => {
    const cancel = new Resuming(request, route, resume).start(agent as unknown as Dispatching, splitUrl(request.url))
    return Effect.sync(cancel)
  })
