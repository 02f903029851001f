/** `import text from "./file?raw"`: the file's content as a string (see assets.ts). */
declare module "*?raw" {
  const text: string;
  export default text;
}
