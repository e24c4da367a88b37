/**
 * A plain `node:http` server on 127.0.0.1 that answers the token and medication operations, for
 * tests that must cross a real socket. It records what arrived on the wire.
 */
import { Effect } from "effect"
import { HttpDate } from "effect-clinical"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Fake from "./FakeService.js"

export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

export interface LoopbackServer {
  readonly url: string
  readonly received: Array<Received>
  /** Resolves when a request to `/hang` (which is never answered) has its connection closed. */
  readonly hangClosed: Promise<void>
}

/** Starts the server in the current scope; it closes with the scope. */
export const serve = Effect.acquireRelease(
  Effect.async<{ server: Http.Server; state: LoopbackServer }>((resume) => {
    const received: Array<Received> = []
    let hangClosedResolve: () => void = () => {}
    const hangClosed = new Promise<void>((resolve) => (hangClosedResolve = resolve))
    let issued = 0
    const valid = new Set<string>()
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const path = req.url ?? "/"
        received.push({ method: req.method ?? "", path, headers: req.headers, body })
        const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
          res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...headers })
          res.end(JSON.stringify(value))
        }
        if (path === "/hang") {
          res.on("close", () => hangClosedResolve())
          return
        }
        if (req.method !== "POST") return json(405, { Message: "The requested resource does not support GET." })
        if (path.toLowerCase() === "/api/server/token") {
          const token = Fake.tokenValue(++issued)
          valid.add(token)
          const now = Date.now()
          return json(200, { Token: token, TokenType: "Bearer" }, {
            TOKEN_EXPIRES: HttpDate.format(now + 3_600_000),
            Date: HttpDate.format(now),
            "Cache-Control": "no-cache",
            Pragma: "no-cache",
            Expires: "-1"
          })
        }
        if (path.toLowerCase() === "/api/clinical/medication/get") {
          const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
          if (!valid.has(token)) return json(401, { Message: "Authorization has been denied for this request." })
          return json(200, { Medications: Fake.MEDICATIONS, Success: true, ErrorMessage: null, ErrorType: null })
        }
        json(404, { Message: "No HTTP resource was found." })
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ server, state: { url: `http://127.0.0.1:${port}`, received, hangClosed } }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ state }) => state))
