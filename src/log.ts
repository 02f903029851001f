/**
 * Logging to stderr only: stdout carries protocol frames and nothing else.
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export const LOG_LEVELS = Object.keys(ORDER) as LogLevel[];

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A logger writing `harness-bridge <level>: message` lines to stderr at or above `level`. */
export function createStderrLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const at = (lvl: Exclude<LogLevel, "silent">) => (message: string) => {
    if (ORDER[lvl] >= ORDER[level]) write(`harness-bridge ${lvl}: ${message}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createStderrLogger("silent");
