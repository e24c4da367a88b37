/**
 * A `node:http` server on 127.0.0.1 that never answers, and tells when a request's connection is
 * closed: the way to see that interrupting a caller aborts the request on the socket.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface HangingServer {
  readonly url: string
  /** How many requests have arrived. */
  readonly arrived: () => number
  /** Resolves when the connection of a request that arrived has been closed. */
  readonly closed: Promise<void>
}

/** Starts the server in the current scope; it closes with the scope. */
export const serve = Effect.acquireRelease(
  Effect.async<{ server: Http.Server; state: HangingServer }>((resume) => {
    let arrived = 0
    let onClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => (onClosed = resolve))
    const server = Http.createServer((req, res) => {
      arrived++
      req.resume()
      res.on("close", onClosed)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ server, state: { url: `http://127.0.0.1:${port}`, arrived: () => arrived, closed } }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ state }) => state))
