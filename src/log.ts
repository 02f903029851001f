/**
 * Logging to stderr only: stdout carries protocol frames and nothing else.
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export const LOG_LEVELS = Object.keys(ORDER) as LogLevel[];

/**
 * A message, or a function that makes it. Pass a function when building the message costs
 * something or touches untrusted data: it is only called when the level is written.
 */
export type LogMessage = string | (() => string);

export interface Logger {
  debug(message: LogMessage): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * A logger writing `harness-bridge <level>: message` lines to stderr at or above `level`;
 * `redact` cleans every line written (the bridge's secrets, see redact.ts).
 */
export function createStderrLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l), redact?: (text: string) => string): Logger {
  const at = (lvl: Exclude<LogLevel, "silent">) => (message: LogMessage) => {
    if (ORDER[lvl] < ORDER[level]) return;
    const text = typeof message === "function" ? message() : message;
    write(`harness-bridge ${lvl}: ${redact ? redact(text) : text}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createStderrLogger("silent");
