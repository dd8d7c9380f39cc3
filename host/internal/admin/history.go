package admin

import (
	"time"

	"github.com/skillhost/skillhost/host/internal/metrics"
)

// History is GET /admin/history: every called skill's last 15 minutes in
// 10 s buckets (calls, errors, rate-limit refusals, mean and highest
// latency), oldest first; the dashboard draws its charts from it.
func (a *Admin) History() metrics.History { return a.d.Metrics.History(time.Now()) }
