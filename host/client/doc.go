// Package client is a small JSON-RPC 2.0 client for a skillhost (or any
// host speaking the same dialect): one request, one response, errors
// returned as *fault.Error so a caller can switch on fault.Kind and Reason
// exactly as the host produced them.
//
//	endpoint, err := client.Endpoint("http://127.0.0.1:8080") // …/rpc
//	rpc := client.HTTP(endpoint, nil)
//	var sess struct{ SessionID string `json:"session_id"` }
//	err = client.Call(ctx, rpc, "_cleveragents/session/create", map[string]any{}, &sess)
//	if fault.KindOf(err) == fault.SessionNotFound { … }
//
// Call and the Doer that HTTP returns are safe for concurrent use.
package client
