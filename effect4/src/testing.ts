/**
 * The Effect 4 line's testing entry point: what users need to test their own code without the
 * real service. A separate entry point, so that the main one never loads a server.
 */
// First: below the line's Node.js floor, importing it throws one clear error (see nodeFloor).
import "./internal/nodeFloor.js"

/** A faithful stand-in for the service: in memory, or over loopback HTTP. */
export * as MockClinicalServer from "./testing/MockClinicalServer.js"
