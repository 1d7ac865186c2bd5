/** A start-up problem the operator must fix; printed without a stack. */
export class StartupError extends Error {}
