/** Entry point of the bundle and the single executable. */
import { main } from "./cli.js";

main();
