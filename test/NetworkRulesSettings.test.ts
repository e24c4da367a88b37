/**
 * What TLS trusts and presents (src/internal/transport/trust.ts), and the transport's settings
 * refused word for word: ca, clientCertificate, the proxy URL and NO_PROXY. The same, for real:
 * test/NetworkTls.test.ts.
 */
import { Either, Redacted } from "effect"
import * as Tls from "node:tls"
import { describe, expect, it } from "vitest"
import * as Proxy from "../src/internal/transport/proxy.js"
import * as Trust from "../src/internal/transport/trust.js"
import { endpoint } from "./support/networkFixtures.js"

describe("what TLS trusts and presents", () => {
  const PEM = Tls.rootCertificates[0]!

  it("certificates are found in one pass: a megabyte of BEGIN lines without an END takes milliseconds, not seconds", () => {
    const pem = Tls.rootCertificates[0]!
    expect(Trust.certificatesOf(`junk\n${pem}\n${pem}\r\n`)).toEqual([pem, pem])
    // A block cut short before a whole one: the whole one alone.
    expect(Trust.certificatesOf(`-----BEGIN CERTIFICATE-----\nabc\n${pem}`)).toEqual([pem])
    const hostile = "-----BEGIN CERTIFICATE-----\n".repeat(40_000)
    expect(hostile.length).toBeGreaterThan(1_000_000)
    expect(Trust.certificatesOf(hostile)).toEqual([])
    expect(Trust.caSetting("x".repeat(1024 * 1024 + 1))).toEqual(Either.left("is longer than 1 MiB"))
  })

  it("PEM text is itself; anything else is a file's path", () => {
    expect(Trust.isPem(PEM)).toBe(true)
    expect(Trust.isPem("/etc/ssl/ca.pem")).toBe(false)
  })

  it("a CA is added to Node's roots and NODE_EXTRA_CA_CERTS's, or trusted alone when asked", () => {
    const extra = Tls.rootCertificates[1]!
    const added = Either.getOrThrow(Trust.trustedCas(PEM, false, extra))
    expect(added).toHaveLength(Tls.rootCertificates.length + 2)
    expect(added.at(-1)).toBe(PEM)
    expect(added.at(-2)).toBe(extra)
    expect(Either.getOrThrow(Trust.trustedCas(`${PEM}\n${extra}`, true, extra))).toEqual([PEM, extra])
    expect(Trust.trustedCas("not a certificate", false, undefined)).toEqual(
      Either.left("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    )
    // Shaped like a certificate, but none: refused, naming the block, never showing it.
    const junk = `-----BEGIN CERTIFICATE-----\n${
      Buffer.from("s3cret-ish text").toString("base64")
    }\n-----END CERTIFICATE-----`
    for (
      const [pem, reason] of [
        [junk, "holds a PEM block that is not a certificate (block 1 of 1)"],
        [`${PEM}\n${junk}\n${PEM}`, "holds a PEM block that is not a certificate (block 2 of 3)"],
        // A certificate with one of its lines lost.
        [
          `${PEM}\n${PEM.split("\n").filter((_, line) => line !== 3).join("\n")}`,
          "holds a PEM block that is not a certificate (block 2 of 2)"
        ]
      ] as const
    ) {
      expect(Trust.trustedCas(pem, true, undefined)).toEqual(Either.left(reason))
    }
  })

  it("a client certificate: cert and key, or a pfx, with an optional passphrase; each refusal says which", () => {
    expect(Trust.clientCertificate({ cert: "c.pem", key: "k.pem" })).toMatchObject(
      Either.right({ _tag: "Pem", cert: "c.pem", passphrase: undefined })
    )
    expect(Trust.clientCertificate({ pfx: "c.p12", passphrase: Redacted.make("pw") })).toMatchObject(
      Either.right({ _tag: "Pkcs12", pfx: "c.p12" })
    )
    expect(Trust.clientCertificate({ cert: "c.pem" })).toEqual(
      Either.left("needs key (CLINICAL_CLIENT_KEY_FILE): the private key's PEM text or file path")
    )
    expect(Trust.clientCertificate({ key: "k.pem" })).toEqual(
      Either.left("needs cert (CLINICAL_CLIENT_CERT_FILE): the certificate's PEM text or file path")
    )
    expect(Trust.clientCertificate({ pfx: "c.p12", cert: "c.pem" })._tag).toBe("Left")
    expect(Trust.clientCertificate({ pfx: 12 })._tag).toBe("Left")
    expect(Trust.clientCertificate({ cert: "c", key: "k", passphrase: 5 })._tag).toBe("Left")
    expect(Trust.clientCertificate("c.pem")._tag).toBe("Left")
    // The key and the passphrase are secrets from the start.
    const read = Either.getOrThrow(Trust.clientCertificate({ cert: "c", key: "the-key", passphrase: "the-pass" }))
    expect(JSON.stringify(read)).not.toMatch(/the-key|the-pass/)
  })
})

describe("the transport's settings, refused word for word", () => {
  it.each([
    [null, "must be { cert, key, passphrase? } or { pfx, passphrase? }"],
    ["cert.pem", "must be { cert, key, passphrase? } or { pfx, passphrase? }"],
    [{ cert: "c", key: "k", passphrase: 5 }, "has a passphrase (CLINICAL_CLIENT_KEY_PASSPHRASE) that is not text"],
    [
      { pfx: "b.p12", cert: "c" },
      "takes a PKCS#12 bundle (pfx, CLINICAL_CLIENT_PFX_FILE) or a PEM cert and key, not both"
    ],
    [
      { pfx: "b.p12", key: "k" },
      "takes a PKCS#12 bundle (pfx, CLINICAL_CLIENT_PFX_FILE) or a PEM cert and key, not both"
    ],
    [{ pfx: 5 }, "has a pfx (CLINICAL_CLIENT_PFX_FILE) that is neither bytes nor a file path"],
    [{ pfx: " " }, "has a pfx (CLINICAL_CLIENT_PFX_FILE) that is neither bytes nor a file path"]
  ])("clientCertificate %j: %s", (value, reason) => {
    expect(Trust.clientCertificate(value)).toEqual(Either.left(reason))
  })

  it("clientCertificate: a bundle of bytes, or a cert and key with a passphrase, read as given", () => {
    const pfx = new Uint8Array([1, 2, 3])
    const bundle = Either.getOrThrow(Trust.clientCertificate({ pfx }))
    expect(bundle).toMatchObject({ _tag: "Pkcs12", pfx, passphrase: undefined })
    const pem = Either.getOrThrow(Trust.clientCertificate({ cert: " c.pem ", key: "k.pem", passphrase: "p" }))
    expect(JSON.stringify(pem)).not.toContain("k.pem")
  })

  it("ca: at most 1 MiB of text; anything but text refused", () => {
    const pem = (length: number) => "-----BEGIN CERTIFICATE-----".padEnd(length, "A")
    expect(Either.isRight(Trust.caSetting(pem(Trust.MAX_PEM_LENGTH)))).toBe(true)
    expect(Trust.caSetting(pem(Trust.MAX_PEM_LENGTH + 1))).toEqual(Either.left("is longer than 1 MiB"))
    expect(Trust.caSetting(5)).toEqual(
      Either.left("must be the CA's certificates as PEM text, or the path of a PEM file")
    )
  })

  it("a key Node cannot read, or one that is not the certificate's, is named as such", () => {
    expect(Trust.secureContextOf({ cert: "junk", key: "junk" })).toEqual(
      Either.left("is not a PEM certificate and key, or a PKCS#12 bundle, that Node can read")
    )
  })

  it("a proxy URL: at most 2,048 characters, blanks around it dropped, a path, query or fragment refused", () => {
    const long = (length: number) => `http://${"p".repeat(length - "http://:3128".length)}:3128`
    expect(Either.isRight(Proxy.proxyEndpoint(long(2048)))).toBe(true)
    expect(Proxy.proxyEndpoint(long(2049))).toEqual(
      Either.left("must be a proxy URL such as http://proxy.example:3128")
    )
    expect(endpoint("  http://proxy.example:3128  ").origin).toBe("http://proxy.example:3128")
    expect(Proxy.proxyEndpoint(" \t ")).toEqual(Either.left("must be a proxy URL such as http://proxy.example:3128"))
    expect(endpoint(" http://a:b%23@proxy.example ").origin).toBe("http://proxy.example:80")
    for (const extra of ["/path", "/?q=1", "/#f"]) {
      expect(Proxy.proxyEndpoint(`http://proxy.example:3128${extra}`)).toEqual(
        Either.left("must be a proxy's address alone: no path, query or fragment")
      )
    }
    expect(endpoint("http://proxy.example:3128/").origin).toBe("http://proxy.example:3128")
    expect(Redacted.value(endpoint("http://alice@proxy.example").authorization!)).toBe(
      `Basic ${Buffer.from("alice:").toString("base64")}`
    )
  })

  it("the proxy setting: a setting already read is kept; anything else is read as a URL", () => {
    expect(Proxy.proxySetting(Proxy.DIRECT)).toEqual(Either.right(Proxy.DIRECT))
    expect(Proxy.proxySetting({ _tag: "Other" })).toEqual(
      Either.left("must be a proxy URL such as http://proxy.example:3128")
    )
    expect(Proxy.proxySetting(null)).toEqual(Either.left("must be a proxy URL such as http://proxy.example:3128"))
  })

  it("NO_PROXY: a bracketed address with or without a port, a prefix of up to three digits, nothing else", () => {
    const bypassed = (noProxy: string, target: string) => Proxy.bypasses(Proxy.bypassOf(noProxy), new URL(target))
    expect(bypassed("[::1]", "http://[::1]:8080")).toBe(true)
    expect(bypassed("x[::1]", "http://[::1]:8080")).toBe(false)
    expect(bypassed("[::1]:80x", "http://[::1]:80")).toBe(false)
    expect(bypassed("10.0.0.0/16", "https://10.0.200.1")).toBe(true)
    expect(bypassed("10.0.0.0/8/9", "https://10.0.0.1")).toBe(false)
    expect(bypassed("example.com/8", "https://example.com")).toBe(false)
    // An address without a prefix is itself alone, in its family's width.
    expect(bypassed("::1", "http://[::2]")).toBe(false)
    expect(bypassed("fd00::1", "http://[fd00::1:1]")).toBe(false)
  })

  it("the environment's variables in lower case as in upper; no proxy set reads none", () => {
    const via = (env: Record<string, string>, target: string) =>
      Proxy.proxyFor(Either.getOrThrow(Proxy.routesOf(Proxy.FROM_ENVIRONMENT, undefined, env)), new URL(target))?.origin
    expect(via({ all_proxy: "http://all:4" }, "https://api.example")).toBe("http://all:4")
    expect(via({ http_proxy: "http://h:3" }, "http://api.example")).toBe("http://h:3")
    expect(via({ http_proxy: "http://h:3" }, "https://api.example")).toBeUndefined()
    expect(via({ HTTPS_PROXY: "http://s:1" }, "http://api.example")).toBeUndefined()
    expect(via({ HTTPS_PROXY: "http://s:1", no_proxy: "api.example" }, "https://api.example")).toBeUndefined()
    const explicit = Either.getOrThrow(Proxy.proxySetting("http://q:2"))
    const through = Either.getOrThrow(Proxy.routesOf(explicit, undefined, { no_proxy: "api.example" }))
    expect(Proxy.proxyFor(through, new URL("https://api.example"))).toBeUndefined()
    const direct = Either.getOrThrow(Proxy.routesOf(Proxy.DIRECT, undefined, { HTTPS_PROXY: "http://s:1" }))
    expect(direct).toEqual({ http: undefined, https: undefined, bypass: { rules: [] } })
  })
})
