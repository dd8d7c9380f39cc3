// Command markdown is the skillhost "markdown" plugin: render turns
// CommonMark (plus GitHub tables, strikethrough, autolinks and task lists)
// into HTML with github.com/yuin/goldmark.
//
// Raw HTML in the input is escaped (shown as text) unless the caller sets
// allow_html, and dangerous link targets (javascript:, vbscript:, file:,
// data: other than images) are always dropped by goldmark.
package main
