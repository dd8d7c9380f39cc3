package main

import (
	"errors"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/client"
)

// defaultURL is the host the client commands talk to when neither --url
// nor SKILLHOST_URL names one.
const defaultURL = "http://127.0.0.1:8080"

// target is what the client commands (call, plugins, status) need to reach
// a host: its URL and a credential.
type target struct {
	url, apiKey, caCert string
}

// flags adds --url and --api-key. Their defaults come from the environment
// when the command runs, not here: --help would print a key.
func (t *target) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.url, "url", "", "host base URL (default: $SKILLHOST_URL, else "+defaultURL+")")
	cmd.Flags().StringVar(&t.apiKey, "api-key", "", "API key or session token (default: $SKILLHOST_API_KEY)")
	cmd.Flags().StringVar(&t.caCert, "cacert", "", "PEM file of a CA to trust besides the system's, for a host with a private CA (default: $SKILLHOST_CACERT)")
}

// resolve fills what the flags left empty from SKILLHOST_URL and
// SKILLHOST_API_KEY (client settings, never read by serve's config layer).
func (t *target) resolve() {
	if t.url == "" {
		t.url = os.Getenv("SKILLHOST_URL")
	}
	if t.url == "" {
		t.url = defaultURL
	}
	if t.apiKey == "" {
		t.apiKey = os.Getenv("SKILLHOST_API_KEY")
	}
	if t.caCert == "" {
		t.caCert = os.Getenv("SKILLHOST_CACERT")
	}
}

// httpClient is the client to reach the host with: the system's CAs, plus
// --cacert's when given. A file that is missing or holds no certificate is
// a usage error naming the flag.
func (t *target) httpClient() (*http.Client, error) {
	if t.caCert == "" {
		return http.DefaultClient, nil
	}
	pem, err := os.ReadFile(t.caCert)
	if err != nil {
		return nil, usagef("--cacert: %v", err)
	}
	hc, err := client.NewHTTPClient(pem)
	if err != nil {
		return nil, usagef("--cacert %s: %v", t.caCert, err)
	}
	return hc, nil
}

// plainHTTP turns a reply that was not what the client expected into one
// plain line ("POST …: HTTP 408 Request Timeout: …"), never a decoding
// error; other errors pass unchanged.
func plainHTTP(err error) error {
	var he *client.HTTPError
	if errors.As(err, &he) {
		return he
	}
	return err
}
