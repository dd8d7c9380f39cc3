package host_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

// Finding 3: /rpc accepted text/plain with a foreign Origin and any Host,
// so any web page could drive a loopback-only host (cross-site POST), and
// DNS rebinding could read the replies. Each request shape, with a real
// HTTP client against a host without keys.
func TestBrowserRequestsAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		c.HTTP.AllowedOrigins = []string{"https://dashboard.example"}
		c.HTTP.AllowedHosts = []string{"skills.internal"}
	})
	hostPort := strings.TrimPrefix(th.URL, "http://")
	_, port, _ := net.SplitHostPort(hostPort)
	body := rpcBody("_cleveragents/session/create", map[string]any{})
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		reason  string
	}{
		{"cross-site simple POST", "/rpc", map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, 403, "origin_denied"},
		{"text/plain, no origin", "/rpc", map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"form encoding", "/events", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"no content type", "/rpc", map[string]string{"Content-Type": ""}, 415, "unsupported_media_type"},
		{"foreign origin, JSON", "/rpc", map[string]string{"Origin": "https://evil.example"}, 403, "origin_denied"},
		{"null origin (sandboxed frame)", "/rpc", map[string]string{"Origin": "null"}, 403, "origin_denied"},
		{"DNS rebinding: foreign Host", "/rpc", map[string]string{"Host": "evil.example:" + port}, 403, "host_denied"},
		{"DNS rebinding: foreign Host and its origin", "/rpc", map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}, 403, "host_denied"},
		{"rebinding on /events", "/events", map[string]string{"Host": "evil.example"}, 403, "host_denied"},
		{"same origin", "/rpc", map[string]string{"Origin": "http://" + hostPort}, 200, ""},
		{"localhost origin and host", "/rpc", map[string]string{"Origin": "http://localhost:" + port, "Host": "localhost:" + port}, 200, ""},
		{"configured origin", "/rpc", map[string]string{"Origin": "https://dashboard.example"}, 200, ""},
		{"configured host, any port", "/rpc", map[string]string{"Host": "skills.internal:" + port}, 200, ""},
		{"JSON with charset", "/rpc", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, ""},
		{"no browser headers", "/rpc", nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := send(context.Background(), httpClient, th.URL+tt.path, tt.headers, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == 200 {
				if r.Status/100 != 2 || r.RPC.Error != nil {
					t.Errorf("HTTP %d %s", r.Status, r.Body)
				}
				return
			}
			code := -32105
			if tt.status == 415 {
				code = -32600
			}
			wantRefused(t, r, tt.status, code, tt.reason)
		})
	}
	req, _ := http.NewRequest(http.MethodGet, th.URL+"/metrics", nil)
	req.Host = "evil.example:" + port
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("GET /metrics with a rebinding Host: %d, want 403", resp.StatusCode)
	}
	if resp, _ := th.get(t, "/.well-known/agent-card.json"); resp.StatusCode != 200 {
		t.Errorf("the card is public: %d", resp.StatusCode)
	}
	if len(logs.lines(`"audit: request refused"`, `"reason":"host_denied"`)) == 0 {
		t.Error("no audit line for a refused Host")
	}
}

// mustCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths and a pool trusting it.
func mustCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skillhost test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// HTTPS with http.tls: a real TLS client calls with a key; plain HTTP and
// TLS 1.1 are refused; the card advertises https URLs.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	certFile, keyFile, pool := mustCert(t)
	key := newKey(t, "ci", "*")
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.HTTP.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile}
		c.Auth.Keys = []config.AuthKey{key.Entry}
	})
	if !strings.HasPrefix(th.URL, "https://") {
		t.Fatalf("URL %s", th.URL)
	}
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer tlsClient.CloseIdleConnections()
	r, err := send(context.Background(), tlsClient, th.URL+"/rpc", map[string]string{"X-API-Key": key.Secret}, rpcBody("_cleveragents/session/create", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.RPC.Error != nil {
		t.Fatalf("over TLS: HTTP %d %s", r.Status, r.Body)
	}
	resp, err := tlsClient.Get(th.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		URL string `json:"url"`
	}
	_ = jsonDecode(resp, &card)
	if !strings.HasPrefix(card.URL, "https://127.0.0.1:") {
		t.Errorf("card url %q, want https", card.URL)
	}
	plain := strings.Replace(th.URL, "https://", "http://", 1)
	if r, err := send(context.Background(), httpClient, plain+"/rpc", map[string]string{"X-API-Key": key.Secret}, rpcBody("ListTasks", map[string]any{})); err == nil && r.Status == 200 {
		t.Error("plain HTTP to the TLS port answered 200")
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get(th.URL + "/health"); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
}

// Plain HTTP on a non-loopback address needs the explicit opt-in, and a
// broken certificate fails the start with a clear error.
func TestInsecureRemoteNeedsOptIn(t *testing.T) {
	t.Parallel()
	certFile, _, _ := mustCert(t)
	tests := []struct {
		name   string
		mutate func(*config.Config)
		want   string
	}{
		{"plain HTTP on every interface", func(c *config.Config) { c.Listen = "0.0.0.0:0" }, "http.allow_insecure_remote: true"},
		{"key file missing", func(c *config.Config) {
			c.HTTP.TLS = config.TLS{CertFile: certFile, KeyFile: filepath.Join(t.TempDir(), "absent.pem")}
		}, "config http.tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.Listen, cfg.Data, cfg.Plugins = "127.0.0.1:0", t.TempDir(), t.TempDir()
			tt.mutate(&cfg)
			h, err := host.New(context.Background(), cfg, host.WithLogger(quietLogger()))
			if err == nil {
				_ = h.Close(context.Background())
				t.Fatal("host.New accepted the configuration")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
