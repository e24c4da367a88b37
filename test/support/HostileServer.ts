/**
 * The hostile specification's servers (spec/hostileServer.ts) in an Effect 3 scope, for the root
 * tests that start one inside an Effect: the server closes with the scope, and `drained` is an
 * Effect to bound with `Effect.timeout`.
 */
import { Effect } from "effect"
import * as Spec from "../../spec/hostileServer.js"

export {
  answerToken,
  APPLICATION_ID,
  dataRequests,
  type Handler,
  isToken,
  json,
  PERSON_UID,
  type Received,
  TOKEN,
  withToken
} from "../../spec/hostileServer.js"

export interface Server extends Omit<Spec.Server, "drained" | "close"> {
  /** Completes once every request whose answer never finished has had its connection closed (checked every 10 ms). */
  readonly drained: Effect.Effect<void>
}

/** Starts a server in the current scope. */
export const serve = (handler: Spec.Handler) =>
  Effect.acquireRelease(
    Effect.promise(() => Spec.start(handler)),
    (server) => Effect.promise(() => server.close())
  ).pipe(Effect.map((server): Server => ({
    url: server.url,
    origin: server.origin,
    received: server.received,
    abandoned: server.abandoned,
    connections: server.connections,
    drained: Effect.gen(function*() {
      while (server.abandoned() > 0) yield* Effect.sleep("10 millis")
    })
  })))
