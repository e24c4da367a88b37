/**
 * What TLS trusts and presents (core/transport/trust.ts's rules) over this line's secrets: a
 * client certificate's key and passphrase held as `Redacted`, each refusal an `Either`.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import type * as Tls from "node:tls"
import * as Core from "../../../core/transport/trust.js"
import { fromChecked, reveal } from "../validate.js"

export { certificatesOf, type ClientTls, isPem, MAX_PEM_LENGTH } from "../../../core/transport/trust.js"

export type ClientCertificate = Core.ClientCertificate<Redacted.Redacted<string>>

const secrets: Core.Secrets<Redacted.Redacted<string>> = { reveal, seal: (text) => Redacted.make(text) }

/** The `clientCertificate` setting read (see the core's `clientCertificate`). */
export const clientCertificate = (value: unknown): Either.Either<ClientCertificate, string> =>
  fromChecked(Core.clientCertificate(value, secrets))

/** The `ca` setting read: PEM text or a file path. */
export const caSetting = (value: unknown): Either.Either<string, string> => fromChecked(Core.caSetting(value, reveal))

/** The CAs a client trusts (see the core's `trustedCas`). */
export const trustedCas = (
  ca: string,
  caOnly: boolean,
  extraCertificates: string | undefined
): Either.Either<ReadonlyArray<string>, string> => fromChecked(Core.trustedCas(ca, caOnly, extraCertificates))

/** The TLS context of the CAs trusted and the client certificate, or what is wrong. */
export const secureContextOf = (
  tls: Core.ClientTls & { readonly ca?: Array<string> }
): Either.Either<Tls.SecureContext, string> => fromChecked(Core.secureContextOf(tls))
