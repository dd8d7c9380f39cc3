// Package admin builds what operators read about a running host: the
// documents of the admin endpoints (GET /admin/plugins, /admin/pool,
// /admin/failures, /admin/status, /admin/history), which `skillhost
// plugins`, `skillhost status` and the /ui dashboard show, the host's
// health (degraded while a plugin needs an operator), and the bounded ring
// of recent failures they list.
//
//	failures := admin.NewRing(admin.DefaultRingSize)
//	a := admin.New(admin.Deps{Registry: reg, Runtime: rt, Metrics: m, Failures: failures})
//	doc := a.Plugins() // JSON-encodable
//
// Everything here reads the registry, the runtime and the metrics; nothing
// changes them. An Admin and a Ring are safe for concurrent use.
package admin
