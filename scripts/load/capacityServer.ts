/**
 * A service of fixed capacity for the load-control scenarios (docs/resilience.md), run in a process
 * of its own so that the client's CPU does not slow it: `capacity` data requests at once, each
 * answered after `latencyMillis`; one more is answered 429 at once (with `Retry-After` when set),
 * or waits for its turn at the service when the plan says `queueExcess`. Its behaviour follows a
 * plan of phases in time from its start or from the answer the plan names (503 to everything, the port closed, another latency or
 * one growing, a share of random 500s), and it counts what it saw, by 100 ms.
 *
 *   node --import tsx scripts/load/capacityServer.ts '<plan as JSON>'
 *
 * prints `{"port": N, "controlPort": M}` on its first line once it listens; a GET to the control
 * port answers its counts (`Stats`), a POST to its `/start` starts the plan's time (else the first
 * request does: a service down from the start sees none).
 * Token requests are answered at once and not counted against the capacity (but a 503 phase and a
 * closed port take them too).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { BUCKET_MILLIS, type Phase, type Plan } from "./capacityPlan.js"

const plan = JSON.parse(process.argv[2] ?? "{}") as Plan
// The plan's time starts with the first request (the clients' start-up is not the service's).
let started: number | undefined
const elapsedNow = () => (started === undefined ? 0 : Date.now() - started)
// The phases' time: the service's own, or from the answer the plan names (normal until then).
let phasesFrom: number | undefined
const phasesStartedAt = () => plan.phasesAfterAnswers === undefined ? started : phasesFrom
const phaseTimeNow = () => {
  const from = phasesStartedAt()
  return from === undefined ? (plan.phasesAfterAnswers === undefined ? 0 : -1) : Date.now() - from
}
const phaseNow = (): Phase => {
  const elapsed = phaseTimeNow()
  // Each phase says all that holds from its time on: what it does not say is back to normal.
  let current: Phase = { at: 0 }
  for (const phase of plan.phases) if (phase.at <= elapsed) current = phase
  return current
}

/** How long a request whose service begins now takes: the phase's latency, or where its growth has reached. */
const latencyNow = (): number => {
  const phase = phaseNow()
  const from = phase.latencyMillis ?? 20
  const next = plan.phases.find((p) => p.at > phase.at)
  if (phase.latencyToMillis === undefined || next === undefined) return from
  const share = Math.min(1, (phaseTimeNow() - phase.at) / (next.at - phase.at))
  return from + (phase.latencyToMillis - from) * share
}

const totals = { answered: 0, throttled: 0, failed: 0, tokenRequests: 0, peakInFlight: 0 }
const buckets: Array<
  { requests: number; tokenRequests: number; throttled: number; failed: number; peakInFlight: number }
> = []
const bucket = () => {
  const index = Math.floor(elapsedNow() / BUCKET_MILLIS)
  while (buckets.length <= index) {
    buckets.push({ requests: 0, tokenRequests: 0, throttled: 0, failed: 0, peakInFlight: 0 })
  }
  return buckets[index]!
}
/** Requests being served. */
let serving = 0
/** Requests waiting for their turn at the service (with `queueExcess`), first come first served. */
const waiting: Array<Http.ServerResponse> = []

const json = (res: Http.ServerResponse, status: number, body: unknown, headers: Http.OutgoingHttpHeaders = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...headers })
  res.end(text)
}

const MEDICATIONS = {
  Medications: [{ Name: "Lisinopril", Strength: "10 mg" }],
  Success: true,
  ErrorMessage: null,
  ErrorType: null
}

const handle = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const path = (req.url ?? "").toLowerCase()
  started ??= Date.now()
  const phase = phaseNow()
  if (path.endsWith("/api/server/token")) {
    totals.tokenRequests++
    bucket().tokenRequests++
    if (phase.status !== undefined) return json(res, phase.status, {})
    const now = Date.now()
    return json(res, 200, { Token: "scenario-token", TokenType: "Bearer" }, {
      Date: new Date(now).toUTCString(),
      TOKEN_EXPIRES: new Date(now + 3_600_000).toUTCString()
    })
  }
  const counts = bucket()
  counts.requests++
  if (phase.status !== undefined || (phase.failingShare !== undefined && Math.random() < phase.failingShare)) {
    totals.failed++
    counts.failed++
    return json(res, phase.status ?? 500, {})
  }
  if (serving >= plan.capacity && plan.queueExcess === true) {
    waiting.push(res)
    // A client that gives up (its attempt timed out) takes its request out of the line.
    res.once("close", () => {
      const at = waiting.indexOf(res)
      if (at >= 0) waiting.splice(at, 1)
    })
    return countInFlight()
  }
  if (serving >= plan.capacity) {
    totals.throttled++
    counts.throttled++
    return json(
      res,
      429,
      {},
      plan.retryAfterSeconds === undefined ? {} : { "Retry-After": String(plan.retryAfterSeconds) }
    )
  }
  serve(res)
}

/** The most requests open at the service at once, those waiting for their turn included. */
const countInFlight = () => {
  const open = serving + waiting.length
  totals.peakInFlight = Math.max(totals.peakInFlight, open)
  const counts = bucket()
  counts.peakInFlight = Math.max(counts.peakInFlight, open)
}

/** Serves a request, then the first one waiting. */
const serve = (res: Http.ServerResponse) => {
  serving++
  countInFlight()
  setTimeout(() => {
    serving--
    totals.answered++
    if (phasesFrom === undefined && totals.answered === plan.phasesAfterAnswers) phasesFrom = Date.now()
    json(res, 200, MEDICATIONS)
    const next = waiting.shift()
    if (next !== undefined) serve(next)
  }, latencyNow())
}

// Requests are read whole before they are answered (the client sends a small JSON body).
const server = Http.createServer((req, res) => {
  req.resume()
  req.on("end", () => handle(req, res))
})
server.keepAliveTimeout = 60_000

let port = 0
const sockets = new Set<import("node:net").Socket>()
server.on("connection", (socket) => {
  sockets.add(socket)
  socket.on("close", () => sockets.delete(socket))
})

/** Opens and closes the port as the plan says (checked every 20 ms). */
const followClosedPhases = () => {
  let closed = false
  setInterval(() => {
    const shouldClose = phaseNow().closed === true
    if (shouldClose && !closed) {
      closed = true
      server.close()
      for (const socket of sockets) socket.destroy()
    } else if (!shouldClose && closed) {
      closed = false
      server.listen(port, "127.0.0.1")
    }
  }, 20).unref()
}

// The counts on a port of their own, open while the service's is closed.
const control = Http.createServer((req, res) => {
  if (req.method === "POST" && req.url === "/start") started ??= Date.now()
  json(res, 200, { ...totals, startedAt: started, phasesStartedAt: phasesStartedAt(), buckets })
})

server.listen(0, "127.0.0.1", () => {
  port = (server.address() as AddressInfo).port
  control.listen(0, "127.0.0.1", () => {
    const controlPort = (control.address() as AddressInfo).port
    process.stdout.write(`${JSON.stringify({ port, controlPort })}\n`)
    followClosedPhases()
  })
})
process.on("SIGTERM", () => process.exit(0))
