package bench

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
)

// FiberEcho is the baseline of P1: the JSON-RPC echo skillhost's
// skill/execute answers, done natively in one Fiber handler with
// encoding/json: no sandbox, no session, no authorization, no metrics. It
// decodes the request, checks the envelope and returns skill_params as the
// output, in the result shape of skill/execute.
func FiberEcho() *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/rpc", func(c *fiber.Ctx) error {
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct {
				SessionID   string          `json:"session_id"`
				SkillID     string          `json:"skill_id"`
				SkillParams json.RawMessage `json:"skill_params"`
			} `json:"params"`
		}
		type rpcError struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		type result struct {
			SkillID         string          `json:"skill_id"`
			Status          string          `json:"status"`
			Output          json.RawMessage `json:"output"`
			ExecutionTimeMS int64           `json:"execution_time_ms"`
		}
		type response struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  *result         `json:"result,omitempty"`
			Error   *rpcError       `json:"error,omitempty"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(c.Body(), &req); err != nil {
			return c.JSON(response{JSONRPC: "2.0", Error: &rpcError{-32700, "parse error"}, ID: json.RawMessage("null")})
		}
		if req.JSONRPC != "2.0" || req.Method != "_cleveragents/skill/execute" || req.Params.SkillID == "" {
			return c.JSON(response{JSONRPC: "2.0", Error: &rpcError{-32600, "invalid request"}, ID: req.ID})
		}
		return c.JSON(response{JSONRPC: "2.0", ID: req.ID, Result: &result{
			SkillID: req.Params.SkillID, Status: "success", Output: req.Params.SkillParams,
		}})
	})
	return app
}
