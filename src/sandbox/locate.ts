/** Executables the sandbox runs, found at fixed system locations, never through PATH or in the workspace. */
import { accessSync, constants, statSync } from "node:fs";

/** Where bash is looked for. */
export const BASH_LOCATIONS: readonly string[] = ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"];

export const isExecutableFile = (p: string) => {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

let bashPath: string | undefined;
/** The absolute path of bash (looked up once). */
export function findBash(): string {
  bashPath ??= BASH_LOCATIONS.find(isExecutableFile) ?? "/bin/bash";
  return bashPath;
}

