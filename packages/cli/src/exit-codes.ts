/** Exit codes, one per failure an agent's script may want to tell apart. */
export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  NOT_LOGGED_IN: 3,
  KEY_REJECTED: 4,
  UNREACHABLE: 5,
} as const;

/** A failure to report as one line on stderr, with its exit code. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(exitCode: number, message: string) {
    super(message);
    this.exitCode = exitCode;
  }
}
