/** temp-folder.ts names the folder node's `os.tmpdir()` names, for every setting of its variables. */
import * as os from "node:os";
import { afterEach, expect, it } from "vitest";
import { tempFolder } from "../src/temp-folder.js";

const saved = { TMPDIR: process.env.TMPDIR, TMP: process.env.TMP, TEMP: process.env.TEMP };
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

it("is os.tmpdir(): TMPDIR, TMP, TEMP in that order, /tmp without any, no trailing slash", () => {
  const settings: Record<string, string | undefined>[] = [
    {},
    { TMPDIR: "/var/tmp" },
    { TMPDIR: "/var/tmp/" },
    { TMPDIR: "/" },
    { TMPDIR: "", TMP: "/scratch" },
    { TMP: "/scratch/", TEMP: "/other" },
    { TEMP: "/other" },
    { TMPDIR: "relative/dir/" },
    { TMPDIR: "/a//" },
  ];
  for (const setting of settings) {
    for (const name of Object.keys(saved)) delete process.env[name];
    for (const [name, value] of Object.entries(setting)) if (value !== undefined) process.env[name] = value;
    expect({ setting, folder: tempFolder() }).toEqual({ setting, folder: os.tmpdir() });
  }
});
