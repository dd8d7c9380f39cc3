// Command fetch is the skillhost "fetch" plugin: fetch_url makes an HTTP GET
// through the host's http_fetch host function (so only the hosts listed in
// the manifest's permissions.allowed_hosts are reachable, and the host's
// redirect and size checks apply) and returns the status, content type and
// the body as text, truncated to max_chars characters.
package main
