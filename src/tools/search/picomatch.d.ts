/** picomatch ships no types; glob.ts uses only `picomatch(glob, options)(path)`. */
declare module "picomatch";
