/**
 * The command line's options, read the way Node's `util.parseArgs` reads them with `strict:
 * true` and no positionals (`--name value`, `--name=value`, `-x`, grouped `-xy`, `--` ends the
 * options; the last of a repeated option wins), with its messages. Why not `util.parseArgs`
 * itself: it is on the start-up path (spawn → `initialize` response), and Node loads and
 * compiles its two internal modules at the first call, a share of the start-up that this
 * loop does not cost (bench/README.md, "Cold start without bubblewrap, round 4").
 * test/cli.test.ts holds the two to the same answers and the same messages.
 *
 * @module
 */

/** An option as `util.parseArgs` declares it. */
export interface ArgSpec {
  type: "string" | "boolean";
  short?: string;
}

/** The option values by long name (`true` for a flag), or throws with the reason. */
export function parseOptions(args: readonly string[], options: Readonly<Record<string, ArgSpec>>): Record<string, string | boolean> {
  const values: Record<string, string | boolean> = Object.create(null) as Record<string, string | boolean>;
  const spec = (name: string): ArgSpec | undefined => (Object.hasOwn(options, name) ? options[name] : undefined);
  const longOf = (short: string): string => Object.keys(options).find((name) => options[name]!.short === short) ?? short;
  /** Stores one option as written (`rawName`), with its value if one came with it. */
  const store = (name: string, rawName: string, value: string | undefined, inline: boolean): void => {
    const option = spec(name);
    if (!option) throw new Error(`Unknown option '${rawName}'`);
    const shortAndLong = `${option.short ? `-${option.short}, ` : ""}--${name}`;
    if (option.type === "string" && value === undefined) throw new Error(`Option '${shortAndLong} <value>' argument missing`);
    if (option.type === "boolean" && value !== undefined) throw new Error(`Option '${shortAndLong}' does not take an argument`);
    if (value !== undefined && !inline && value.length > 1 && value.startsWith("-")) {
      const example = rawName.startsWith("--") ? `'${rawName}=-XYZ'` : `'--${name}=-XYZ' or '${rawName}-XYZ'`;
      throw new Error(
        `Option '${rawName}' argument is ambiguous.\nDid you forget to specify the option argument for '${rawName}'?\nTo specify an option argument starting with a dash use ${example}.`,
      );
    }
    values[name] = value ?? true;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      if (i + 1 < args.length) throw unexpected(args[i + 1]!);
      break;
    }
    if (arg.length < 2 || !arg.startsWith("-")) throw unexpected(arg);
    if (arg.startsWith("--")) {
      // An `=` right after the dashes is part of the name (`--=x` is the option `=x`), as in parseArgs.
      const equal = arg.indexOf("=", 3);
      if (equal !== -1) {
        store(arg.slice(2, equal), arg.slice(0, equal), arg.slice(equal + 1), true);
      } else {
        const name = arg.slice(2);
        const value = spec(name)?.type === "string" && i + 1 < args.length ? args[++i] : undefined;
        store(name, arg, value, false);
      }
      continue;
    }
    // Short options, alone or grouped: a string option takes the rest of the group, or the next argument.
    for (let c = 1; c < arg.length; c++) {
      const name = longOf(arg[c]!);
      if (spec(name)?.type !== "string") {
        store(name, `-${arg[c]}`, undefined, false);
      } else if (c + 1 < arg.length) {
        store(name, `-${arg[c]}`, arg.slice(c + 1), true);
        break;
      } else {
        store(name, `-${arg[c]}`, i + 1 < args.length ? args[++i] : undefined, false);
      }
    }
  }
  return values;
}

const unexpected = (arg: string) => new Error(`Unexpected argument '${arg}'. This command does not take positional arguments`);
