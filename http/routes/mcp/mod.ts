/** The MCP endpoint (decisions §20): the service's read tools and two account tools for agents, at `/mcp`. */
export { createMcpEndpoint, MCP_CORS_HEADERS, MCP_PATH, MCP_SCOPES, type McpEndpoint, type McpEndpointDeps, mcpRoutes } from "./mcp.ts";
export type { McpToolDeps } from "./_tools.ts";
export { MCP_DOCS } from "./_declarations.ts";
