/** API bodies are small JSON objects; anything larger is refused before it is read. */
export const MAX_BODY_BYTES = 64 * 1024;
