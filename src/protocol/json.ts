/**
 * The protocol's leaf: the shapes every other protocol file builds on, importing none of them
 * (types.ts re-exports them, so they are part of the one definition of what crosses stdio).
 *
 * @module
 */

/** A JSON-RPC request id: a string or a number, never `null`. */
export type RequestId = string | number;

/** A JSON value, as carried in frames. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Plain text. The only block a prompt may hold; tool results hold text blocks too. */
export interface TextBlock {
  type: "text";
  text: string;
}
