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
 * Control characters other than newline and tab, as `\xNN`. Log lines quote what servers sent
 * (a model server's or a collector's error body, an MCP server's message): written raw, a
 * hostile one would drive the user's terminal (escape sequences: set the title, clear the
 * screen, rewrite what is shown) through the bridge's stderr.
 */
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
const visible = (text: string) => text.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/**
 * A logger writing `harness-bridge <level>: message` lines to stderr at or above `level`;
 * `redact` cleans every line written (the bridge's secrets, see redact.ts), and control
 * characters are escaped (`visible`).
 */
export function createStderrLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l), redact?: (text: string) => string): Logger {
  const at = (lvl: Exclude<LogLevel, "silent">) => (message: LogMessage) => {
    if (ORDER[lvl] < ORDER[level]) return;
    const text = typeof message === "function" ? message() : message;
    write(`harness-bridge ${lvl}: ${visible(redact ? redact(text) : text)}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createStderrLogger("silent");
