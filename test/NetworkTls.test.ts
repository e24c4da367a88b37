/**
 * The default transport over real TLS (issue 26): the mock served over HTTPS with certificates
 * `openssl` makes at run time (a private CA, a certificate for another host, an expired one, client
 * certificates the server asks for); each refusal is the typed error saying what to check, and the
 * key's passphrase is in no output.
 */
import { Exit, Redacted } from "effect"
import { HttpTransport, TokenService } from "effect-clinical"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import * as Leaks from "./support/Leaks.js"
import {
  call,
  type Env,
  expectFailure,
  failureOf,
  medications,
  pki,
  proxy,
  startPkiAndProxy
} from "./support/networkFixtures.js"
import * as Pki from "./support/Pki.js"

startPkiAndProxy()

describe("real TLS", () => {
  const serve = (pair: Pki.Pair, more: { readonly host?: string; readonly requestCert?: boolean } = {}) =>
    MockClinicalServer.start({
      tls: {
        cert: pair.cert,
        key: pair.key,
        ...(more.host === undefined ? {} : { host: more.host }),
        ...(more.requestCert === true ? { ca: pki.clientCa.cert, requestCert: true } : {})
      }
    })

  it("a private CA: trusted from its PEM text, from its file, alone; refused without it, saying what to set", async () => {
    await using mock = await serve(pki.server)
    for (const options of [{ ca: pki.ca.cert }, { ca: pki.ca.certFile }, { ca: pki.ca.certFile, caOnly: true }]) {
      expect(Exit.isSuccess(await call(mock, medications(mock), options))).toBe(true)
    }
    expectFailure(await call(mock, TokenService.get), {
      _tag: "TransportError",
      reason: "Tls",
      requestSent: false,
      detail: expect.stringMatching(
        /^the server's certificate is not signed by a CA this client trusts \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): give your network's CA as ca \(CLINICAL_CA_FILE\)/
      )
    })
    // Trusting another CA alone does not trust this one.
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.cert, caOnly: true }), { reason: "Tls" })
  })

  it("with a ca, NODE_EXTRA_CA_CERTS's certificates are kept beside it (Node drops them when given a ca); caOnly drops them", async () => {
    await using mock = await serve(pki.server)
    // The server's CA in NODE_EXTRA_CA_CERTS alone, another CA as ca (the environment as the transport reads it).
    const extra = { NODE_EXTRA_CA_CERTS: pki.ca.certFile }
    expect(Exit.isSuccess(await call(mock, medications(mock), { ca: pki.clientCa.certFile }, extra))).toBe(true)
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.certFile, caOnly: true }, extra), {
      reason: "Tls"
    })
    // Unreadable, it is left out as Node leaves it out (with a warning of its own): the ca alone is added.
    const missing = { NODE_EXTRA_CA_CERTS: Path.join(pki.dir, "no-such.pem") }
    expect(Exit.isSuccess(await call(mock, medications(mock), { ca: pki.ca.certFile }, missing))).toBe(true)
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.certFile }, { NODE_EXTRA_CA_CERTS: "" }), {
      reason: "Tls"
    })
  })

  it("a ca that names no usable file, or holds no certificate, fails the layer saying so", async () => {
    await using mock = await serve(pki.server)
    const large = Path.join(pki.dir, "large.pem")
    Fs.writeFileSync(large, "x".repeat(1024 * 1024 + 1))
    // A mebibyte of blocks shaped like certificates, none of them one; and one such block after the real CA.
    const block = `-----BEGIN CERTIFICATE-----\n${
      Buffer.from("not a certificate at all").toString("base64")
    }\n-----END CERTIFICATE-----\n`
    const junk = Path.join(pki.dir, "junk.pem")
    Fs.writeFileSync(junk, block.repeat(Math.floor(1024 * 1024 / block.length)))
    const blocks = Math.floor(1024 * 1024 / block.length)
    const cases: ReadonlyArray<readonly [string, string]> = [
      [large, "names a file larger than 1 MiB"],
      [junk, `holds a PEM block that is not a certificate (block 1 of ${blocks})`],
      [`${pki.ca.cert}\n${block}`, "holds a PEM block that is not a certificate (block 2 of 2)"],
      [pki.dir, "names something that is not a file"],
      [Path.join(pki.dir, "missing.pem"), "names a file that cannot be read (ENOENT)"],
      [pki.client.keyFile, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"]
    ]
    for (const [ca, reason] of cases) {
      expectFailure(await call(mock, TokenService.get, { ca }), { _tag: "InvalidConfig", setting: "ca", reason })
    }
  })

  it("agentOptions.connect beside ca, a client certificate and a proxy: its TLS options reach the connection, direct and tunnelled", async () => {
    // The URL names 127.0.0.1, the certificate localhost: undici's connect option servername says which name to check.
    await using mock = await serve(pki.server, { host: "127.0.0.1" })
    const servername: HttpTransport.UndiciOptions = { ca: pki.ca.cert, connect: { servername: "localhost" } }
    const clientCertificate = { cert: pki.client.certFile, key: pki.client.keyFile }
    const before = proxy.tunnels().length
    for (const options of [servername, { ...servername, clientCertificate }, { ...servername, proxy: proxy.url }]) {
      const exit = await call(mock, medications(mock), options)
      expect(Exit.isSuccess(exit), JSON.stringify(failureOf(exit))).toBe(true)
    }
    expect(proxy.tunnels().slice(before)).toContain(new URL(mock.url).host)
  })

  it("a connector function cannot take ca, a client certificate or a proxy's tunnels: refused, not dropped", async () => {
    await using mock = await serve(pki.server)
    const connect = (() => {}) as unknown as NonNullable<HttpTransport.UndiciOptions["connect"]>
    const cases: ReadonlyArray<readonly [HttpTransport.UndiciOptions, Env]> = [
      [{ connect, ca: pki.ca.cert }, {}],
      [{ connect, clientCertificate: { cert: pki.client.certFile, key: pki.client.keyFile } }, {}],
      [{ connect, proxy: proxy.url }, {}],
      [{ connect }, { HTTPS_PROXY: proxy.url }]
    ]
    for (const [options, env] of cases) {
      expectFailure(await call(mock, TokenService.get, options, env), {
        _tag: "InvalidConfig",
        setting: "agentOptions.connect",
        reason: expect.stringMatching(/^is a function: /)
      })
    }
  })

  it("undici options undici refuses fail the layer, naming the option, before any request", async () => {
    await using mock = await serve(pki.server)
    const cases: ReadonlyArray<readonly [object, string, RegExp]> = [
      [
        { connect: 5 },
        "agentOptions.connect",
        /^must be undici's connect options \(an object\) or a connector function$/
      ],
      [{ connect: "x" }, "agentOptions.connect", /^must be undici's connect options/],
      [{ keepAliveTimeout: -5 }, "agentOptions.keepAliveTimeout", /^was refused by undici: .*keepAliveTimeout/],
      [{ headersTimeout: "x" }, "agentOptions.headersTimeout", /^was refused by undici: .*headersTimeout/],
      [{ connections: -1 }, "agentOptions.connections", /^was refused by undici: .*connections/],
      [{ socketTimeout: 5 }, "agentOptions.socketTimeout", /^was refused by undici: .*socketTimeout/]
    ]
    await mock.resetCounters()
    for (const [options, setting, reason] of cases) {
      expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert, ...options }), {
        _tag: "InvalidConfig",
        setting,
        reason: expect.stringMatching(reason)
      })
    }
    expect((await mock.counters()).tokenRequests).toBe(0)
    // The Promise client: its first call rejects with the same.
    const clinical = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      ca: pki.ca.cert,
      agentOptions: { connect: 5 } as never
    })
    try {
      await expect(clinical.token()).rejects.toMatchObject({ _tag: "InvalidConfig", setting: "agentOptions.connect" })
    } finally {
      await clinical.close()
    }
  })

  it("undici options only its ProxyAgent refuses fail the layer too, when a proxy is set (they died at the first request)", async () => {
    await using mock = await serve(pki.server)
    await mock.resetCounters()
    const withCredentials = "http://user:s3cret@127.0.0.1:9"
    const cases: ReadonlyArray<readonly [object, Env, string]> = [
      [{ auth: "Basic eA==", proxy: withCredentials }, {}, "agentOptions.auth"],
      [{ auth: "Basic eA==" }, { HTTPS_PROXY: withCredentials }, "agentOptions.auth"],
      // undici's message names no option ("Cannot create property 'proxy-authorization' on
      // number '5'"): not the proxy setting, whose name the message holds.
      [{ headers: 5, proxy: withCredentials }, {}, "agentOptions"]
    ]
    for (const [options, env, setting] of cases) {
      const exit = await call(mock, TokenService.get, { ca: pki.ca.cert, ...options }, env)
      expectFailure(exit, { _tag: "InvalidConfig", setting, reason: expect.stringMatching(/^was refused by undici: /) })
      expect(JSON.stringify(exit)).not.toContain("s3cret")
    }
    expect((await mock.counters()).tokenRequests).toBe(0)
  })

  it("a certificate for another host name is refused, naming the host", async () => {
    await using mock = await serve(pki.server, { host: "127.0.0.1" })
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      _tag: "TransportError",
      reason: "Tls",
      detail:
        "the server's certificate is not for 127.0.0.1 (ERR_TLS_CERT_ALTNAME_INVALID): check the host name in the URL"
    })
  })

  it("an expired certificate is refused as expired", async () => {
    await using mock = await serve(pki.expired)
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      reason: "Tls",
      detail: expect.stringMatching(/^the server's certificate has expired \(CERT_HAS_EXPIRED\)/)
    })
  })

  it("a certificate not valid yet is refused as such, pointing at the clock", async () => {
    await using mock = await serve(pki.notYetValid)
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      _tag: "TransportError",
      reason: "Tls",
      requestSent: false,
      detail: "the server's certificate is not valid yet (CERT_NOT_YET_VALID): check this machine's clock"
    })
  })

  it("mutual TLS: the client's certificate as PEM files, with an encrypted key, as PKCS#12; refused without one or with a stranger's", async () => {
    await using mock = await serve(pki.server, { requestCert: true })
    const ca = { ca: pki.ca.cert }
    const accepted: ReadonlyArray<HttpTransport.NetworkOptions["clientCertificate"]> = [
      { cert: pki.client.certFile, key: pki.client.keyFile },
      { cert: pki.client.cert, key: Redacted.make(pki.client.key) },
      { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: Redacted.make(Pki.PASSPHRASE) },
      { pfx: pki.clientP12File, passphrase: Pki.PASSPHRASE }
    ]
    for (const clientCertificate of accepted) {
      expect(Exit.isSuccess(await call(mock, medications(mock), { ...ca, clientCertificate }))).toBe(true)
    }
    // TLS 1.3: the server refuses after the client's side of the handshake; undici sees the connection close.
    expectFailure(await call(mock, TokenService.get, ca), {
      _tag: "TransportError",
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server requires a client certificate, set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)"
    })
    const stranger = await call(mock, TokenService.get, {
      ...ca,
      clientCertificate: { cert: pki.stranger.certFile, key: pki.stranger.keyFile }
    })
    expectFailure(stranger, {
      _tag: "TransportError",
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server checks client certificates, it may have refused this one: check clientCertificate"
    })
  })

  it("a client certificate Node cannot use fails the layer, naming the setting, never the key or passphrase", async () => {
    await using mock = await serve(pki.server)
    const cases: ReadonlyArray<readonly [HttpTransport.NetworkOptions["clientCertificate"], RegExp]> = [
      [
        { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: "wrong-Pa55phrase" },
        /does not open with the passphrase/
      ],
      [{ pfx: pki.clientP12File, passphrase: "wrong-Pa55phrase" }, /does not open with the passphrase/],
      [{ cert: pki.client.certFile, key: pki.stranger.keyFile }, /its key does not belong to its certificate/],
      [{ cert: pki.client.certFile, key: `${pki.dir}/no-such.key` }, /^names a file that cannot be read \(ENOENT\)$/],
      // A device that never ends, a directory: refused before anything is read.
      [{ cert: "/dev/zero", key: pki.client.keyFile }, /^names something that is not a file$/],
      [{ pfx: pki.dir, passphrase: Pki.PASSPHRASE }, /^names something that is not a file$/]
    ]
    for (const [clientCertificate, reason] of cases) {
      const exit = await call(mock, TokenService.get, { ca: pki.ca.cert, clientCertificate })
      expectFailure(exit, { _tag: "InvalidConfig", reason: expect.stringMatching(reason) })
      expect((failureOf(exit) as { setting: string }).setting).toMatch(/^clientCertificate/)
      Leaks.expectNoneInExit(exit, ["wrong-Pa55phrase", Pki.PASSPHRASE, pki.stranger.key.split("\n")[1]!])
    }
  })
})
