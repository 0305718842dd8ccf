const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Whether `value` has the shape of the ids AgentPass makes (`randomUUID`). An id taken from a URL
 * is checked before any query: one that cannot be an id finds nothing, and a byte PostgreSQL
 * refuses in text (NUL) never reaches it.
 */
export function isId(value: string): boolean {
  return UUID.test(value);
}
