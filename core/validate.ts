/** Checks of text both Effect lines make alike, pure. */

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/** True for a GUID in its 36-character hyphenated form, in any letter case. */
export const isGuid = (value: string): boolean => GUID.test(value)
