/**
 * The mock over real HTTP (or HTTPS) on 127.0.0.1, once for both lines: node:http serving a
 * `respond` that each line writes over its own mock (its clock, its sleep for a Delay fault).
 *
 * A Drop outcome destroys the socket without an answer. Closing aborts the signal every answer
 * still being made was given (a line interrupts it: an answer delayed 60 s must not keep the
 * process alive), drops those requests and closes every connection at once.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import type { Outcome } from "./faults.js"
import type { MockRequest } from "./operations.js"

/** Where the mock listens. */
export interface ServeOptions {
  /** Default 0: any free port. */
  readonly port?: number | undefined
  /**
   * Serve over HTTPS, to test a private CA or client certificates: the server's certificate and
   * key (PEM), and with `requestCert` the CA whose client certificates it takes (others are
   * refused in the handshake). The base URL names `host` (default `localhost`, which the
   * certificate must name); the server listens on 127.0.0.1 either way.
   */
  readonly tls?: {
    readonly cert: string
    readonly key: string
    readonly ca?: string | undefined
    readonly requestCert?: boolean | undefined
    readonly host?: string | undefined
  } | undefined
}

/** A listening mock: its base URL and how to stop it. */
export interface Listening {
  /** `http://127.0.0.1:<port>`, or `https://<host>:<port>`. */
  readonly url: string
  /** Stops it: answers still being made are dropped, every connection closed at once. */
  readonly close: () => Promise<void>
}

/**
 * Why the mock could not listen: the TLS material refused (`tls`) or the port taken (`port`).
 * `reason` holds Node's words, never the key.
 */
export class ListenFailure {
  constructor(readonly setting: "tls" | "port", readonly reason: string, readonly cause: unknown) {}
}

/** Answers one request; the signal is aborted when the mock closes. A rejection drops the request. */
export type Respond = (request: MockRequest, signal: AbortSignal) => Promise<Outcome>

/** The largest request body read (as @effect/platform's server did); a larger one reads as empty. */
const MAX_BODY_BYTES = 10 * 1024 * 1024

const DROP: Outcome = { _tag: "Drop" }

const bodyOf = (incoming: Http.IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    incoming.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) chunks.push(chunk)
    })
    incoming.on("end", () => resolve(size <= MAX_BODY_BYTES ? Buffer.concat(chunks).toString("utf8") : ""))
    incoming.on("error", () => resolve(""))
    // Cut off mid-body: answered on what arrived as nothing, as a failed read was before.
    incoming.on("close", () => resolve(""))
  })

const headersOf = (incoming: Http.IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return headers
}

/** Writes the outcome: the response (its content type and length last), or a destroyed socket. */
const write = (incoming: Http.IncomingMessage, outgoing: Http.ServerResponse, outcome: Outcome): void => {
  if (outcome._tag === "Drop") {
    incoming.socket.destroy()
    return
  }
  // The client gave up, or the mock closed: nobody is left to read it.
  if (outgoing.destroyed || outgoing.writableEnded) return
  const { body, headers, status } = outcome.response
  const { "content-type": contentType, ...rest } = headers
  outgoing.writeHead(status, {
    ...rest,
    "content-type": contentType ?? "text/plain",
    "content-length": String(Buffer.byteLength(body))
  })
  outgoing.end(incoming.method === "HEAD" ? undefined : body)
}

const createServer = (tls: ServeOptions["tls"]): Http.Server => {
  // An HTTPS server is an HTTP server over TLS: it emits the same requests.
  if (tls === undefined) return Http.createServer()
  try {
    return Https.createServer({
      cert: tls.cert,
      key: tls.key,
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      requestCert: tls.requestCert === true,
      rejectUnauthorized: tls.requestCert === true
    }) as unknown as Http.Server
  } catch (cause) {
    throw new ListenFailure("tls", `was refused: ${cause instanceof Error ? cause.message : String(cause)}`, cause)
  }
}

const listening = (server: Http.Server, port: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const refused = (cause: NodeJS.ErrnoException) =>
      reject(new ListenFailure("port", `cannot be listened on (${cause.code ?? cause.message})`, cause))
    server.once("error", refused)
    try {
      server.listen({ port, host: "127.0.0.1" }, () => {
        server.off("error", refused)
        resolve()
      })
    } catch (cause) {
      // A port out of range throws at once.
      refused(cause as NodeJS.ErrnoException)
    }
  })

/**
 * Serves `respond` on 127.0.0.1 (HTTPS with `tls`) and resolves once it listens; rejects with a
 * {@link ListenFailure}.
 */
export const listen = async (respond: Respond, options: ServeOptions = {}): Promise<Listening> => {
  const { port = 0, tls } = options
  const server = createServer(tls)
  const closing = new AbortController()
  server.on("request", (incoming: Http.IncomingMessage, outgoing: Http.ServerResponse) => {
    // Answered whatever the client does: a client that gives up does not stop the mock (it
    // records what it answered); only closing the mock does.
    void bodyOf(incoming)
      .then((body) =>
        respond({
          method: incoming.method ?? "GET",
          url: `http://127.0.0.1${incoming.url ?? "/"}`,
          headers: headersOf(incoming),
          body
        }, closing.signal)
      )
      .then((outcome) => closing.signal.aborted ? DROP : outcome, () => DROP)
      .then((outcome) => write(incoming, outgoing, outcome))
  })
  await listening(server, port)
  const address = server.address()
  const origin = tls === undefined ? "http://127.0.0.1" : `https://${tls.host ?? "localhost"}`
  const url = typeof address === "object" && address !== null ? `${origin}:${address.port}` : origin
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        closing.abort()
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
