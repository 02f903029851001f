/**
 * The page's assets, hand-written files in ./assets, embedded in the viewer chunk as strings
 * (`?raw`: vite's text import when run from source, the build's `raw-text` plugin in
 * scripts/build.mjs for the binary). Nothing is fetched from anywhere else at run time and
 * there is no build step for the page: what is in ./assets is what the browser gets.
 *
 * @module
 */
import css from "./assets/viewer.css?raw";
import html from "./assets/index.html?raw";
import js from "./assets/viewer.js?raw";

export interface Asset {
  type: string;
  body: string;
}

/** Path → asset. */
export const ASSETS: Readonly<Record<string, Asset>> = {
  "/": { type: "text/html; charset=utf-8", body: html },
  "/viewer.js": { type: "text/javascript; charset=utf-8", body: js },
  "/viewer.css": { type: "text/css; charset=utf-8", body: css },
};
