/**
 * Which proxy a request goes through (core/transport/proxy.ts's rules) over this line's secrets:
 * a proxy's credentials held as `Redacted`, each refusal an `Either`.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/transport/proxy.js"
import { fromChecked, reveal } from "../validate.js"

export { type Bypass, bypasses, bypassOf, DIRECT, FROM_ENVIRONMENT, NO_BYPASS } from "../../../core/transport/proxy.js"

export type ProxyEndpoint = Core.ProxyEndpoint<Redacted.Redacted<string>>
export type ProxySetting = Core.ProxySetting<Redacted.Redacted<string>>
export type EnvironmentProxies = Core.EnvironmentProxies<Redacted.Redacted<string>>
export type Routes = Core.Routes<Redacted.Redacted<string>>

const seal = (secret: string): Redacted.Redacted<string> => Redacted.make(secret)

const toEither = <A>(checked: Core.ByVariable<A>): Either.Either<A, readonly [string, string]> =>
  checked.ok ? Either.right(checked.value) : Either.left([checked.variable, checked.reason] as const)

/** A proxy URL read (see the core's `proxyEndpoint`); given as text, a `URL` or `Redacted`. */
export const proxyEndpoint = (value: unknown): Either.Either<ProxyEndpoint, string> =>
  fromChecked(Core.proxyEndpoint(reveal(value), seal))

/** The `proxy` setting read: a proxy URL, or `false` / `"none"` for none (or a setting already read). */
export const proxySetting = (value: unknown): Either.Either<ProxySetting, string> =>
  fromChecked(Core.proxySetting(value, { reveal, seal }))

/** The proxies an environment names; a refused one as `[variable, reason]`. */
export const environmentProxies = (
  env: Readonly<Record<string, string | undefined>>
): Either.Either<EnvironmentProxies, readonly [string, string]> => toEither(Core.environmentProxies(env, seal))

/** The routes a setting gives in an environment; a refused variable as `[variable, reason]`. */
export const routesOf = (
  setting: ProxySetting,
  noProxy: string | undefined,
  env: Readonly<Record<string, string | undefined>>
): Either.Either<Routes, readonly [string, string]> => toEither(Core.routesOf(setting, noProxy, env, seal))

/** The proxy a request to `target` goes through, or `undefined` for none. */
export const proxyFor: (routes: Routes, target: URL) => ProxyEndpoint | undefined = Core.proxyFor
