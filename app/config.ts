/** The service's configuration in typed sections (app/config/): `readConfig` and the section types. */
export * from "./config/mod.ts";
