/**
 * effect-clinical: an Effect 4 client for a clinical patient-data HTTP API.
 */
// First: below the line's Node.js floor, importing it throws one clear error (see nodeFloor).
import "./internal/nodeFloor.js"

/** The whole client as layers. */
export * as ClinicalClient from "./ClinicalClient.js"

/** The resolved settings, from options or the environment. */
export * as ClinicalConfig from "./ClinicalConfig.js"

/** Every failure, as `Schema.TaggedError` classes. */
export * as ClinicalError from "./ClinicalError.js"

/** HTTP dates (RFC 9110): parse all three forms, format IMF-fixdate. */
export * as HttpDate from "./HttpDate.js"

/** The pluggable transport: undici (default), any `effect/http` HttpClient, or in memory. */
export * as HttpTransport from "./HttpTransport.js"

/** A person's medications: the typed view of `PersonData.medications`. */
export * as MedicationService from "./MedicationService.js"

/** Authenticating a person: pass code and date of birth to PersonUid. */
export * as PersonAuthentication from "./PersonAuthentication.js"

/** A person's data: every documented operation, and any other, from a one-line definition. */
export * as PersonData from "./PersonData.js"

/** The bearer token, cached and kept fresh. */
export * as TokenService from "./TokenService.js"

/** Where the token is shared among the instances of a fleet: in memory (the default) or Redis. */
export * as TokenStore from "./TokenStore.js"
