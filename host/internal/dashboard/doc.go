// Package dashboard holds the operator dashboard served at /ui/: one
// static page (HTML, JavaScript and CSS, no build step) that reads the
// admin documents (/admin/status, /admin/plugins), the Agent Card and the
// event stream (/events), and shows agents, skills with their limits, call
// rates and error reasons, pools, recent failures and plan progress.
//
//	httpx.Config{UI: dashboard.Assets, …}
//
// The page inserts every value as text (plugin names, descriptions and
// error messages come from plugins and clients), loads nothing from other
// origins (the host serves it with a strict Content-Security-Policy), and
// keeps an API key, when the host asks for one, in the tab's
// sessionStorage, sending it only as an Authorization header.
package dashboard

import (
	"embed"
	"io/fs"
)

//go:embed assets
var files embed.FS

// Assets are the dashboard's files: index.html, app.js, style.css.
var Assets fs.FS = mustSub(files, "assets")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded folder exists: a build error otherwise
	}
	return sub
}
