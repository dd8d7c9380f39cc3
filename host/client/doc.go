// Package client is a small JSON-RPC 2.0 client for a skillhost (or any
// host speaking the same dialect): one request, one response, errors
// returned as *fault.Error so a caller can switch on fault.Kind and Reason
// exactly as the host produced them.
//
//	c, err := client.New("http://127.0.0.1:8080")
//	var sess struct{ SessionID string `json:"session_id"` }
//	err = c.Call(ctx, "_cleveragents/session/create", map[string]any{}, &sess)
//
// A Client is safe for concurrent use.
package client
