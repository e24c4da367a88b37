/**
 * A command's own HTTP server (the metrics endpoint, the dashboard): listening on a host and port,
 * a port that cannot be had a usage error naming it, closed with the scope, open connections too
 * (a scraper or a browser keeps one between requests: `close()` alone would wait for it).
 */
import * as Effect from "effect/Effect"
import { createServer, type RequestListener, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type CliError, usage } from "./outcome.js"

/** `handler` served on `host:port` (0: any free port) until the scope closes; `what` names it in a refusal. */
export const listening = (handler: RequestListener, host: string, port: number, what: string) =>
  Effect.acquireRelease(
    Effect.async<Server, CliError>((resume) => {
      const server = createServer(handler)
      server.once("error", (error: NodeJS.ErrnoException) =>
        resume(Effect.fail(usage(`cannot serve ${what} on ${host}:${port}: ${error.code ?? "error"}`))))
      server.listen(port, host, () =>
        resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() =>
          resume(Effect.void)
        )
        server.closeAllConnections()
      })
  )

/** Where a server listens, as a URL's origin shows it (`[::1]` for IPv6). */
export const originOf = (server: Server): string => {
  const { address, port } = server.address() as AddressInfo
  return `http://${address.includes(":") ? `[${address}]` : address}:${port}`
}
