package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// getJSON GETs addr's path (an admin document: loopback needs no key)
// and decodes it into out.
func getJSON(addr, path string, out any) error {
	status, body, err := fasthttp.GetTimeout(nil, "http://"+addr+path, 30*time.Second)
	if err != nil {
		return err
	}
	if status != fasthttp.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %.200s", path, status, body)
	}
	return json.Unmarshal(body, out)
}

// poolDoc is what the harness reads of GET /admin/pool.
type poolDoc struct {
	Instances struct {
		Live uint64 `json:"live"`
	} `json:"instances"`
	Code struct {
		ResidentBytes uint64 `json:"resident_bytes"`
		Plugins       uint64 `json:"plugins"`
	} `json:"code"`
	Compiles struct {
		Running uint64 `json:"running"`
		Queued  uint64 `json:"queued"`
	} `json:"compiles"`
}

// waitUntil polls cond every 50 ms until it holds, fails, or max passes.
func waitUntil(ctx context.Context, max time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitReady waits until n plugins are loaded and none compiles.
func waitReady(ctx context.Context, addr string, n int, max time.Duration) error {
	return waitUntil(ctx, max, fmt.Sprintf("%d plugins loaded", n), func() (bool, error) {
		var doc struct {
			Plugins []struct {
				State string `json:"state"`
			} `json:"plugins"`
		}
		if err := getJSON(addr, "/admin/plugins", &doc); err != nil {
			return false, err
		}
		loaded := 0
		for _, p := range doc.Plugins {
			if p.State == "loaded" {
				loaded++
			}
		}
		return loaded == n, nil
	})
}

// waitIdle waits until the host holds no instance and no compiled code.
func waitIdle(ctx context.Context, addr string, max time.Duration) error {
	return waitUntil(ctx, max, "no instance and no code resident", func() (bool, error) {
		var doc poolDoc
		if err := getJSON(addr, "/admin/pool", &doc); err != nil {
			return false, err
		}
		return doc.Instances.Live == 0 && doc.Code.Plugins == 0 && doc.Compiles.Running == 0 && doc.Compiles.Queued == 0, nil
	})
}
