/**
 * A plain `node:http` server on 127.0.0.1 for what the mock does not do: `/hang` never answers (and
 * tells when its connection closes), `/chunked/<bytes>` streams a body of that size with no
 * Content-Length, `/sized/<bytes>` sends one with it.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface RawServer {
  readonly url: string
  /** How many requests have arrived. */
  readonly arrived: () => number
  /** Resolves when the connection of a `/hang` request has been closed. */
  readonly closed: Promise<void>
}

const body = (bytes: number) => Buffer.alloc(bytes, "x")

/** Starts the server in the current scope; it closes with the scope. */
export const serve = Effect.acquireRelease(
  Effect.async<{ server: Http.Server; state: RawServer }>((resume) => {
    let arrived = 0
    let onClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => (onClosed = resolve))
    const server = Http.createServer((req, res) => {
      arrived++
      req.resume()
      const [, route, size] = (req.url ?? "").split("/")
      if (route === "chunked") {
        res.writeHead(200, { "Content-Type": "application/json" })
        const total = Number(size)
        for (let sent = 0; sent < total; sent += 1024) res.write(body(Math.min(1024, total - sent)))
        res.end()
      } else if (route === "sized") {
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": String(Number(size)) })
        res.end(body(Number(size)))
      } else {
        res.on("close", onClosed)
      }
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

/** `http://127.0.0.1:<port>` of a port that was free a moment ago and has nothing listening: connections are refused. */
export const closedPortUrl = Effect.async<string>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}`)))
  })
})
