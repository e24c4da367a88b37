/**
 * Misbehaving servers on 127.0.0.1 for the hostile specification (spec/hostile.ts): a plain
 * `node:http` server whose every answer is the test's to write (raw bytes on the socket included),
 * that records what arrived and counts its open connections. Effect-free and Promise-based, so that
 * both lines' suites (and the root's Effect wrapper, test/support/HostileServer.ts) use this one.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** The ApplicationId, token and PersonUid of the suite: each in a form that tests every echo. */
export const APPLICATION_ID = "7A1C3E5F-2B4D-4F60-8A9B-0C1D2E3F4A5B"
export const TOKEN = `+/+/${Buffer.from("hostile-suite-access-token:".repeat(3)).toString("base64")}${
  Buffer.from("z".repeat(13)).toString("base64")
}`
export const PERSON_UID = "Qk9CL3BlcnNvbi91aWQrKz09/x+y=="

/** One request as it arrived. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** Answers one request; `res.socket` is there for answers that are not HTTP at all. */
export type Handler = (received: Received, res: Http.ServerResponse) => void

export interface Server {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** The origin as the client prints it. */
  readonly origin: string
  readonly received: Array<Received>
  /** Requests whose answer never finished and whose connection is still open. */
  readonly abandoned: () => number
  /**
   * Resolves once every request whose answer never finished has had its connection closed (the
   * client aborted it); rejects if one is still open after `withinMillis`. Idle keep-alive
   * connections do not count.
   */
  readonly drained: (withinMillis?: number) => Promise<void>
  /** Connections open now, idle keep-alive ones included. */
  readonly connections: () => number
  /** Closes every connection and the server. */
  readonly close: () => Promise<void>
}

/** Is this a token request? (The service writes the path in two cases.) */
export const isToken = (received: Received): boolean => received.path.toLowerCase() === "/api/server/token"

/** The data requests (not token ones) the server received so far. */
export const dataRequests = (server: Pick<Server, "received">): ReadonlyArray<Received> =>
  server.received.filter((received) => !isToken(received))

/** A JSON answer with a Content-Length. */
export const json = (
  res: Http.ServerResponse,
  status: number,
  body: unknown,
  headers: Http.OutgoingHttpHeaders = {}
) => {
  const text = typeof body === "string" ? body : JSON.stringify(body)
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...headers })
  res.end(text)
}

/** A good token answer, as the real service writes it; `body` and `headers` override parts of it. */
export const answerToken = (
  res: Http.ServerResponse,
  { body, headers }: { readonly body?: unknown; readonly headers?: Http.OutgoingHttpHeaders } = {}
) => {
  const now = Date.now()
  json(res, 200, body ?? { Token: TOKEN, TokenType: "Bearer" }, {
    Date: new Date(now).toUTCString(),
    TOKEN_EXPIRES: new Date(now + 3_600_000).toUTCString(),
    "Cache-Control": "no-cache",
    ...headers
  })
}

/** Token requests get a good token; data requests go to `data`. */
export const withToken = (data: Handler): Handler => (received, res) =>
  isToken(received) ? answerToken(res) : data(received, res)

/** Resolves once `condition` holds (checked every `everyMillis`); rejects, saying `what`, after `withinMillis`. */
export const until = async (
  what: string,
  condition: () => boolean,
  withinMillis = 2_000,
  everyMillis = 5
): Promise<void> => {
  const started = Date.now()
  while (!condition()) {
    if (Date.now() - started > withinMillis) throw new Error(`not within ${withinMillis} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMillis))
  }
}

/** Starts a server; `close` it when done. */
export const start = (handler: Handler): Promise<Server> =>
  new Promise((resolve) => {
    const received: Array<Received> = []
    const open = new Set<Http.ServerResponse>()
    let connections = 0
    const server = Http.createServer((req, res) => {
      // Open until its answer is finished or its connection is gone.
      if (!req.socket.destroyed) open.add(res)
      res.on("finish", () => open.delete(res))
      req.socket.on("close", () => open.delete(res))
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const entry = {
          method: req.method ?? "",
          path: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8")
        }
        received.push(entry)
        handler(entry, res)
      })
    })
    server.on("connection", (socket) => {
      connections++
      socket.on("close", () => connections--)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const url = `http://127.0.0.1:${port}`
      resolve({
        url,
        origin: url,
        received,
        abandoned: () => open.size,
        drained: (withinMillis = 2_000) =>
          until("every unfinished answer's connection closed by the client", () => open.size === 0, withinMillis, 10),
        connections: () => connections,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })

/** Runs `body` with a `serve` that starts servers, every one of them closed when `body` ends. */
export const withServers = async <A>(
  body: (serve: (handler: Handler) => Promise<Server>) => Promise<A>
): Promise<A> => {
  const started: Array<Server> = []
  try {
    return await body(async (handler) => {
      const server = await start(handler)
      started.push(server)
      return server
    })
  } finally {
    await Promise.all(started.map((server) => server.close()))
  }
}
