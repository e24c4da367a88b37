/**
 * Who may open `queue dashboard` (pure: tests drive it without a server). On loopback anyone on the
 * machine may, unless a password is set; beyond loopback, HTTP basic auth is required: a dashboard
 * open to a network shows a queue's work to whoever finds it.
 */
import { createHash, timingSafeEqual } from "node:crypto"

/** The shortest password a dashboard beyond loopback takes. */
export const MIN_PASSWORD_LENGTH = 12

/** Whether `host` is a loopback address (only this machine reaches it). */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** The credentials basic auth asks for, or none. */
export type Access = { readonly user: string; readonly password: string } | undefined

/**
 * The access of a dashboard on `host` with the user and password of the settings, or the reason
 * it is refused (a usage error's text; never the password).
 */
export const accessOf = (host: string, user: string, password: string | undefined): Access | string => {
  if (password === undefined || password === "") {
    return isLoopback(host)
      ? undefined
      : `queue dashboard on ${host} (beyond loopback) needs CLINICAL_DASHBOARD_PASSWORD: its basic auth's password`
  }
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    return `CLINICAL_DASHBOARD_PASSWORD must be ${MIN_PASSWORD_LENGTH} characters at least`
  }
  if (user === "" || user.includes(":") || /[\x00-\x1f\x7f]/.test(user)) {
    return "CLINICAL_DASHBOARD_USER must be a name without ':' or control characters"
  }
  return { user, password }
}

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/**
 * Whether an `Authorization` header carries the access's credentials: compared in constant time
 * (digests of equal length), so that the time taken says nothing of how much of a guess was right.
 */
export const authorized = (header: string | undefined, access: NonNullable<Access>): boolean => {
  const match = /^Basic ([A-Za-z0-9+/=]{1,1024})$/i.exec(header?.trim() ?? "")
  if (match === null) return false
  const given = Buffer.from(match[1]!, "base64").toString("utf8")
  return timingSafeEqual(digest(given), digest(`${access.user}:${access.password}`))
}

/**
 * Whether a request's `Host` header names this machine's loopback (`localhost`, `127.x.x.x`,
 * `[::1]`, with any port): a dashboard without a password answers those alone, so that a web page
 * whose name was rebound to 127.0.0.1 (DNS rebinding) cannot read it from a browser.
 */
export const isLoopbackHost = (header: string | undefined): boolean => {
  const match = /^(\[::1\]|[A-Za-z0-9.-]{1,253})(:\d{1,5})?$/.exec(header?.trim() ?? "")
  return match !== null && isLoopback(match[1]!.toLowerCase())
}
