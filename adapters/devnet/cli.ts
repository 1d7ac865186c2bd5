// `bun run devnet`: a persistent devnet for local development (adapters/devnet/command.ts says what it does).
import { runDevnetCommand } from "./command.ts";

process.exit(await runDevnetCommand(process.env));
