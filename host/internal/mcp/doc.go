// Package mcp serves skillhost's skills as Model Context Protocol tools,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Every skill of the plugin registry is one tool: its name is the skill id,
// its description and input schema come from the manifest (through the same
// function that renders the Agent Card's skills, so card and tools never
// disagree), and the tool list follows hot reload (the SDK sends
// notifications/tools/list_changed). A tool call runs the skill as an A2A
// SendMessage through the JSON-RPC engine — the same handlers, scopes,
// limits and metrics as every other way in — in the A2A context
// "mcp-<session id>", so the context host functions keep state for the MCP
// session. The output is the result's structured content (and its JSON as
// text); a sandbox error is a tool error (isError) whose structured content
// carries the same code and reason the other bindings report.
//
// The transports are the SDK's: Streamable HTTP (Handler, mounted at /mcp
// by the HTTP transport, which authenticates first) and stdio (ServeStdio,
// for `skillhost serve --mcp-stdio`).
package mcp
