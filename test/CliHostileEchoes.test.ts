/**
 * The `effect-clinical` executable against a server that echoes what a request carried (the built
 * bin, a child process): the token, the ApplicationId and the PersonUid never reach stdout, stderr or
 * the batch's results, in any form an ASP.NET/IIS service could write.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { APP, ELEANOR, envOf, setUpCli, workspace } from "./support/cliFixtures.js"
import { expectNone, FORMS } from "./support/Leaks.js"

setUpCli("effect-clinical-cli-hostile-")

/** What a data request carried, as a service that echoes it sees it. */
interface Carried {
  readonly app: string
  readonly bearer: string
  readonly uid: string
  readonly body: string
}

/** A service whose token answers are good, and whose data answers `answer` writes from what the request carried. */
const echoingService = async (answer: (carried: Carried) => { readonly status: number; readonly body: unknown }) => {
  const token = `${Buffer.from("an echoed token, long enough to be a real one".repeat(2)).toString("base64")}+/=`
  const server = Http.createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => body += chunk.toString("utf8"))
    req.on("end", () => {
      const now = Date.now()
      if ((req.url ?? "").toLowerCase() === "/api/server/token") {
        res.writeHead(200, {
          "Content-Type": "application/json",
          Date: new Date(now).toUTCString(),
          TOKEN_EXPIRES: new Date(now + 3_600_000).toUTCString()
        })
        return res.end(JSON.stringify({ Token: token, TokenType: "Bearer" }))
      }
      const answered = answer({
        app: String(req.headers.applicationid),
        bearer: String(req.headers.authorization).slice("Bearer ".length),
        uid: JSON.parse(body).personuid as string,
        body
      })
      res.writeHead(answered.status, { "Content-Type": "application/json" })
      res.end(JSON.stringify(answered.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Items that echo everything the request carried. */
const echoedInItems = ({ app, bearer, uid }: Carried) => ({
  status: 200,
  body: {
    Success: true,
    Medications: [{
      Name: "Lisinopril",
      Note: `app ${app.toLowerCase()}, token ${encodeURIComponent(bearer)}, person ${uid}`,
      [bearer]: app.replace(/-/g, "")
    }]
  }
})

describe("what the server echoes of a request is never written out", { timeout: 60_000 }, () => {
  it("the token and the ApplicationId inside items: redacted on stdout and in the batch's results", async () => {
    const service = await echoingService(echoedInItems)
    try {
      const secrets = [service.token, APP, ELEANOR!.personUid]
      const printed = await Cli.run(["medications", "--json", ELEANOR!.personUid], { env: envOf(service.url) })
      expect(printed.code, printed.stderr).toBe(0)
      expect(JSON.parse(printed.stdout)[0].items).toEqual([{
        Name: "Lisinopril",
        Note: "app <redacted>, token <redacted>, person <redacted>",
        "<redacted>": "<redacted>"
      }])
      expectNone("stdout", printed.stdout, secrets)
      const table = await Cli.run(["medications", ELEANOR!.personUid], { env: envOf(service.url) })
      expectNone("table", table.stdout, secrets)

      const here = workspace("echoes", { "persons.txt": `${ELEANOR!.personUid}\n` })
      const out = Path.join(here, "results.ndjson")
      const batch = await Cli.run(
        ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
        { env: envOf(service.url) }
      )
      expect(batch.code, batch.stderr).toBe(0)
      expect(Fs.readFileSync(out, "utf8")).toContain("person <redacted>")
      expectNone("results", Fs.readFileSync(out, "utf8"), secrets)
    } finally {
      await service.close()
    }
  })
})

describe(
  "what a server echoes in its errors never reaches the terminal, in any form (issue 22)",
  { timeout: 60_000 },
  () => {
    it("each form an ASP.NET/IIS service could write, one at a time, on stdout and stderr", async () => {
      // Side by side: each is a process of its own, several seconds on a busy machine.
      await Promise.all(
        FORMS.filter(([form]) => form !== "a date reformatted").map(async ([form, write]) => {
          const service = await echoingService(({ app, bearer, body, uid }) => ({
            status: 400,
            body: {
              Success: false,
              ErrorType: "Refused",
              ErrorMessage: [app, bearer, uid, body].flatMap(write).join(" | ")
            }
          }))
          try {
            // NDJSON: the person's error as data on stdout, and its line on stderr (a table of one
            // failed person prints nothing: the error line says it, once).
            const ran = await Cli.run(["medications", "--ndjson", ELEANOR!.personUid], { env: envOf(service.url) })
            expect(ran.code, form).toBe(1)
            expect(ran.stdout, form).toContain("<redacted>")
            expect(ran.stderr, form).toContain("<redacted>")
            expectNone(`stdout (${form})`, ran.stdout, [service.token, APP, ELEANOR!.personUid])
            expectNone(`stderr (${form})`, ran.stderr, [service.token, APP, ELEANOR!.personUid])
          } finally {
            await service.close()
          }
        })
      )
    }, 180_000)
  }
)
