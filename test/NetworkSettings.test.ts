/**
 * Proxy, TLS and a client certificate end to end: the privacy suite over all three (no secret in any
 * output), the settings reaching the transport from options and from CLINICAL_* variables, and
 * `effect-clinical probe` reporting the proxy and the TLS it went through.
 */
import { Effect, Exit, Layer, Redacted } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import { createClinicalClient, createClinicalClientFromEnv } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Cli from "./support/Cli.js"
import * as Leaks from "./support/Leaks.js"
import { pki, proxy, startPkiAndProxy, transport } from "./support/networkFixtures.js"
import * as Pki from "./support/Pki.js"

startPkiAndProxy()

const execFile = promisify(ChildProcess.execFile)
const execFileSyncText = (file: string, args: ReadonlyArray<string>) =>
  ChildProcess.execFileSync(file, args, { encoding: "utf8" }).trim()

describe("the privacy suite over proxy, TLS and a client certificate", () => {
  it("no secret in any log line or error: the token, the ApplicationId, the PersonUid, the proxy's password, the key's passphrase", async () => {
    await using mock = await MockClinicalServer.start({
      tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.clientCa.cert, requestCert: true }
    })
    const options: HttpTransport.UndiciOptions = {
      proxy: Redacted.make(proxy.url),
      ca: pki.ca.certFile,
      clientCertificate: { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: Pki.PASSPHRASE }
    }
    const logs = Leaks.captureLogs()
    const personUid = mock.persons[0]!.personUid
    const run = <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>, more: HttpTransport.UndiciOptions = {}) =>
      Effect.runPromiseExit(effect.pipe(
        Effect.provide(
          ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 1 }).pipe(
            Layer.provide(transport({ ...options, ...more }, {}))
          )
        ),
        Effect.provide(logs.layer)
      ))
    expect(Exit.isSuccess(await run(MedicationService.get(personUid)))).toBe(true)
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(503), MockClinicalServer.Fault.drop])
    const exits = [
      await run(MedicationService.get(personUid)),
      await run(MedicationService.get("no-such-person-0000")),
      await run(TokenService.get, { proxy: `http://${proxy.user}:wrong@127.0.0.1:${proxy.port}` })
    ]
    expect(exits.map((exit) => exit._tag)).toEqual(["Failure", "Failure", "Failure"])
    const token = Object.entries((await mock.requestLog()).find((r) => r.operation === "medications")!.headers)
      .find(([name]) => name.toLowerCase() === "authorization")![1].replace(/^Bearer /, "")
    const secrets = [token, mock.applicationId, personUid, proxy.password, Pki.PASSPHRASE]
    for (const exit of exits) Leaks.expectNoneInExit(exit, secrets)
    expect(logs.lines.length).toBeGreaterThan(0)
    for (const line of logs.lines) Leaks.expectNone("log line", line, secrets)
  })
})

describe("the settings reach the transport, from options and from CLINICAL_* variables", { timeout: 60_000 }, () => {
  let mock: MockClinicalServer.Started
  beforeAll(async () => {
    mock = await MockClinicalServer.start({
      tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.clientCa.cert, requestCert: true }
    })
  })
  afterAll(async () => {
    await mock?.close()
  })
  const personUid = () => mock.persons[0]!.personUid

  it("ClinicalClient.layerUndici: proxy, CA and client certificate as options (README's snippet)", async () => {
    const before = proxy.tunnels().length
    const [baseUrl, applicationId, proxyUrl] = [mock.url, mock.applicationId, proxy.url]
    const [caFile, certFile, keyFile, keyPassphrase] = [
      pki.ca.certFile,
      pki.client.certFile,
      pki.clientEncryptedKeyFile,
      Pki.PASSPHRASE
    ]
    // #region behind-a-proxy
    const ClinicalLive = ClinicalClient.layerUndici({
      baseUrl,
      applicationId,
      // The network's egress proxy (http://user:password@proxy:3128): a secret, for its password.
      proxy: Redacted.make(proxyUrl),
      // The CA that signs the network's TLS, trusted besides Node's own.
      ca: caFile,
      // The certificate the service issued for mutual TLS, its key encrypted.
      clientCertificate: { cert: certFile, key: keyFile, passphrase: Redacted.make(keyPassphrase) }
    })
    // #endregion
    const exit = await Effect.runPromiseExit(MedicationService.get(personUid()).pipe(Effect.provide(ClinicalLive)))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(proxy.tunnels().length).toBeGreaterThan(before)
  })

  it("the Promise client: createClinicalClient's options, and createClinicalClientFromEnv's variables", async () => {
    const before = proxy.tunnels().length
    const fromOptions = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      proxy: Redacted.make(proxy.url),
      ca: pki.ca.cert,
      clientCertificate: { pfx: pki.clientP12File, passphrase: Pki.PASSPHRASE }
    })
    const fromEnv = createClinicalClientFromEnv({
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId,
      CLINICAL_PROXY: proxy.url,
      CLINICAL_CA_FILE: pki.ca.certFile,
      CLINICAL_CLIENT_CERT_FILE: pki.client.certFile,
      CLINICAL_CLIENT_KEY_FILE: pki.clientEncryptedKeyFile,
      CLINICAL_CLIENT_KEY_PASSPHRASE: Pki.PASSPHRASE
    })
    try {
      for (const clinical of [fromOptions, fromEnv]) {
        expect((await clinical.medications(personUid())).medications.length).toBeGreaterThan(0)
      }
    } finally {
      await fromOptions.close()
      await fromEnv.close()
    }
    expect(proxy.tunnels().length).toBeGreaterThanOrEqual(before + 2)
  })

  it("NODE_EXTRA_CA_CERTS keeps working, with a ca added beside it; with caOnly, only ca is trusted", async () => {
    const plain = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    try {
      const script = [
        `import { createClinicalClient } from ${JSON.stringify(Path.resolve("dist/src/promise.js"))}`,
        "const [url, applicationId, personUid, options] = process.argv.slice(1)",
        "const clinical = createClinicalClient({ baseUrl: url, applicationId, maxRetries: 0, ...JSON.parse(options) })",
        "try { await clinical.medications(personUid); console.log('ok') }",
        "catch (error) { console.log(`${error._tag} ${error.reason}`) } finally { await clinical.close() }"
      ].join("\n")
      // Not execFileSync: the mock answers from this process's event loop.
      const run = async (options: object) =>
        (await execFile(process.execPath, [
          "--input-type=module",
          "-e",
          script,
          plain.url,
          plain.applicationId,
          plain.persons[0]!.personUid,
          JSON.stringify(options)
        ], { env: { ...process.env, NODE_EXTRA_CA_CERTS: pki.ca.certFile }, encoding: "utf8" })).stdout.trim()
      expect(await run({})).toBe("ok")
      expect(await run({ ca: pki.clientCa.certFile })).toBe("ok")
      expect(await run({ ca: pki.clientCa.certFile, caOnly: true })).toBe("TransportError Tls")
    } finally {
      await plain.close()
    }
  })
})

// Child processes (the built executable, node): the suite's budget for them, as in Cli.test.ts.
describe("effect-clinical probe through the proxy, over TLS", { timeout: 60_000 }, () => {
  it("reports the proxy in use (never its credentials), the TLS version and the server certificate's issuer and expiry", async () => {
    await using mock = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    const env = {
      ...Cli.settingsFor(mock.url),
      CLINICAL_PROXY: proxy.url,
      CLINICAL_CA_FILE: pki.ca.certFile
    }
    const before = proxy.tunnels().length
    const json = await Cli.run(["probe", "--json"], { env })
    expect(json.code, json.stderr).toBe(0)
    const expires = new Date(
      execFileSyncText("openssl", ["x509", "-enddate", "-noout", "-in", pki.server.certFile])
        .replace(/^notAfter=/, "")
    ).toISOString()
    expect(JSON.parse(json.stdout).connection).toEqual({
      proxy: proxy.origin,
      tls: { version: "TLSv1.3", issuer: "CN=effect-clinical test CA", expires }
    })
    expect(proxy.tunnels().length).toBeGreaterThan(before)
    const table = await Cli.run(["probe"], { env })
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(new RegExp(`proxy\\s+${proxy.origin.replace(/\./g, "\\.")}\\n`))
    expect(table.stdout).toMatch(/TLS\s+TLSv1\.3\n/)
    expect(table.stdout).toMatch(/server certificate issuer\s+CN=effect-clinical test CA\n/)
    for (const ran of [json, table]) {
      Leaks.expectNone("probe output", ran.stdout + ran.stderr, [proxy.password, `${proxy.user}:${proxy.password}`])
    }
    // Direct, over plain HTTP: no proxy, no TLS.
    await using plain = await MockClinicalServer.start()
    const direct = await Cli.run(["probe", "--json"], {
      env: { ...Cli.settingsFor(plain.url), CLINICAL_PROXY: "none" }
    })
    expect(JSON.parse(direct.stdout).connection).toEqual({ proxy: null, tls: null })
  })

  it("reports the TLS through the tunnel when the server is trusted by NODE_EXTRA_CA_CERTS, the proxy on the same host name", async () => {
    await using mock = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    // The proxy named as the service is (localhost): its own connection, plain, is another origin.
    const proxyUrl = proxy.url.replace("127.0.0.1", "localhost")
    const before = proxy.tunnels().length
    const ran = await Cli.run(["probe", "--json"], {
      env: { ...Cli.settingsFor(mock.url), HTTPS_PROXY: proxyUrl, NODE_EXTRA_CA_CERTS: pki.ca.certFile }
    })
    expect(ran.code, ran.stderr).toBe(0)
    expect(JSON.parse(ran.stdout).connection).toEqual({
      proxy: `http://localhost:${proxy.port}`,
      tls: { version: "TLSv1.3", issuer: "CN=effect-clinical test CA", expires: expect.any(String) }
    })
    expect(proxy.tunnels().length).toBeGreaterThan(before)
  })
})
