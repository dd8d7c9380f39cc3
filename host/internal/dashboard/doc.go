// Package dashboard holds the operator dashboard served at /ui/: one
// static page (HTML, JavaScript and CSS, no build step) that reads the
// admin documents (/admin/status, /admin/plugins, /admin/history), the
// Agent Card and the event stream (/events), and shows the host's health
// and the plugins needing attention, per-skill charts of calls, errors and
// latency over the last minutes (inline SVG drawn by charts.js), agents and
// skills with their state, limits, rate rules, call rates and error
// reasons in a table sortable and filterable by state (table.js), pools,
// recent failures and plan progress.
//
//	httpx.Config{UI: dashboard.Assets, …}
//
// The page inserts every value as text (plugin names, descriptions and
// error messages come from plugins and clients; the charts are built with
// DOM calls, never markup strings), loads nothing from other origins (the
// host serves it with a strict Content-Security-Policy), and keeps an API
// key, when the host asks for one, in the tab's sessionStorage, sending it
// only as an Authorization header.
package dashboard

import (
	"embed"
	"io/fs"
)

//go:embed assets
var files embed.FS

// Assets are the dashboard's files: index.html, app.js, charts.js,
// table.js, style.css.
var Assets fs.FS = mustSub(files, "assets")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded folder exists: a build error otherwise
	}
	return sub
}
