/**
 * A backend without Effect: plain `node:http` and `effect-clinical/promise` (Express, Fastify or
 * NestJS look the same). One client for the whole process, a signal per call so that a client who
 * hangs up cancels the request upstream, typed errors mapped to HTTP answers, and a clean shutdown.
 *
 * Runs against the built-in mock: `node --import tsx examples/http-backend.ts` (one process, so that
 * SIGTERM reaches its handler: docs/distributed.md says why not the `tsx` command), then
 * `curl http://127.0.0.1:<port>/patients/1/medications`.
 */
import { createClinicalClient, isClinicalError } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

const mock = await MockClinicalServer.start()
// One client per process: one token cache, one connection pool. A bad setting throws here, at start.
const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })

// In a real backend the PersonUid comes from your user store, saved when the patient authenticated.
// It never leaves the server: the route names the patient by your own id.
const personUids = new Map(mock.persons.map((person, i) => [String(i + 1), person.personUid]))

const send = (res: Http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "Content-Type": "application/json" })
  res.end(JSON.stringify(body))
}

const server = Http.createServer(async (req, res) => {
  const id = /^\/patients\/(\w+)\/medications$/.exec(req.url ?? "")?.[1]
  const personUid = id === undefined ? undefined : personUids.get(id)
  if (req.method !== "GET" || personUid === undefined) return send(res, 404, { error: "NotFound" })
  const hangUp = new AbortController()
  res.on("close", () => hangUp.abort())
  try {
    const { medications } = await clinical.medications(personUid, { signal: hangUp.signal })
    send(res, 200, medications.map((m) => ({ name: m.Name, strength: m.Strength, instructions: m.Instructions })))
  } catch (error) {
    if (hangUp.signal.aborted) return
    // The message is safe to log (no secret, no PersonUid); the caller gets the kind of failure.
    console.error(isClinicalError(error) ? error.message : error)
    send(res, isClinicalError(error) && error._tag === "InvalidRequest" ? 400 : 502, {
      error: isClinicalError(error) ? error._tag : "Internal"
    })
  }
})

server.listen(0, "127.0.0.1", () => {
  console.log(`listening at http://127.0.0.1:${(server.address() as AddressInfo).port}`)
})

// Shutdown: stop taking requests, then release the client and the mock; the process then exits by itself.
const stop = () => {
  server.close()
  server.closeAllConnections()
  void clinical.close().then(() => mock.close()).then(() => console.log("stopped"))
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
