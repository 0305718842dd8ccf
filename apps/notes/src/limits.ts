/** Notes bodies may carry documents; anything over 1 MiB is refused before it is read. */
export const MAX_BODY_BYTES = 1024 * 1024;
