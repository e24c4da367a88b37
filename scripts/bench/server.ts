/**
 * The benchmark's server: plain node:http, no Effect, in its own process, so that what is measured
 * is the client. It answers the token and medication operations with realistic bodies and headers,
 * checks the bearer token, and counts requests (GET /stats). Prints its base URL on stdout.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { FIXTURE_PERSONS } from "../../core/testing/fixture.js"

const TOKEN = `+/+/${Buffer.from("benchmark-token-".repeat(4)).toString("base64")}${
  Buffer.from("x".repeat(20)).toString("base64")
}`
const MEDICATIONS = JSON.stringify({
  Medications: FIXTURE_PERSONS[0]!.medications,
  Success: true,
  ErrorMessage: null,
  ErrorType: null
})
const counts = { token: 0, medications: 0 }

/** Answers with a Content-Length, as the real service (ASP.NET Web API) does for JSON bodies. */
const send = (res: Http.ServerResponse, status: number, headers: Record<string, string>, body: string) => {
  res.writeHead(status, { ...headers, "Content-Length": String(Buffer.byteLength(body)) })
  res.end(body)
}

const server = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const now = Date.now()
    const common = {
      "Content-Type": "application/json; charset=utf-8",
      "Cache-Control": "no-cache",
      Pragma: "no-cache",
      Expires: "-1",
      Date: new Date(now).toUTCString()
    }
    if (req.url === "/stats") {
      return send(res, 200, { "Content-Type": "application/json" }, JSON.stringify(counts))
    }
    if (req.method === "POST" && req.url?.toLowerCase() === "/api/server/token") {
      counts.token++
      const headers = { ...common, TOKEN_EXPIRES: new Date(now + 3_600_000).toUTCString() }
      return send(res, 200, headers, JSON.stringify({ Token: TOKEN, TokenType: "Bearer" }))
    }
    if (req.method === "POST" && req.url?.toLowerCase() === "/api/clinical/medication/get") {
      counts.medications++
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        return send(res, 401, common, JSON.stringify({ Message: "Authorization has been denied for this request." }))
      }
      return send(res, 200, common, MEDICATIONS)
    }
    send(res, 404, common, JSON.stringify({ Message: "Not found." }))
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
})
