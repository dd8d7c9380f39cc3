package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mustPrivateCA writes a CA certificate (ca.pem) and a server certificate
// for 127.0.0.1 it signed (cert.pem, key.pem) into dir: a host with a
// private CA, which no system pool trusts.
func mustPrivateCA(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skillhost test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string]*pem.Block{
		caFile: {Type: "CERTIFICATE", Bytes: caDER}, certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

// A host under TLS with a private CA: the client commands reach it with
// --cacert (or SKILLHOST_CACERT), fail clearly without it, and a plain
// http:// URL on the HTTPS port gets a line saying to use https://.
func TestClientCommandsWithPrivateCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, certFile, keyFile := mustPrivateCA(t, dir)
	cfg := filepath.Join(dir, "skillhost.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  tls: {cert_file: "+certFile+", key_file: "+keyFile+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := launch(t, exec.Command(binPath, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--plugins", t.TempDir()))
	if !strings.HasPrefix(h.url, "https://") {
		t.Fatalf("the host logged %s, want an https URL", h.url)
	}
	waitHealthTLS(t, h, caFile)

	for _, cmd := range [][]string{{"status"}, {"plugins"}, {"call", "_cleveragents/session/create", "{}"}} {
		args := append(append([]string{}, cmd...), "--url", h.url, "--cacert", caFile)
		if out, errOut, code := runCLI(t, args...); code != 0 {
			t.Errorf("%v --cacert: exit %d\n%s\n%s", cmd, code, out, errOut)
		}
	}
	c := exec.Command(binPath, "status", "--url", h.url)
	c.Env = append(os.Environ(), "SKILLHOST_CACERT="+caFile)
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("status with SKILLHOST_CACERT: %v\n%s", err, out)
	}
	if _, errOut, code := runCLI(t, "status", "--url", h.url); code != 1 || !strings.Contains(errOut, "certificate") {
		t.Errorf("without --cacert: want exit 1 naming the certificate; got %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "status", "--url", h.url, "--cacert", filepath.Join(dir, "missing.pem")); code != 2 || !strings.Contains(errOut, "--cacert") {
		t.Errorf("a missing --cacert file: want exit 2 naming the flag; got %d: %s", code, errOut)
	}
	plain := "http://" + strings.TrimPrefix(h.url, "https://")
	if _, errOut, code := runCLI(t, "status", "--url", plain); code != 1 || !strings.Contains(errOut, "use an https:// URL") {
		t.Errorf("http:// on the HTTPS port: want exit 1 saying to use https://; got %d: %s", code, errOut)
	}
}

// waitHealthTLS waits until the host's /health answers over TLS, trusting
// caFile.
func waitHealthTLS(t *testing.T, h *hostProc, caFile string) {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	if !pollEvery(60*time.Second, 50*time.Millisecond, func() bool {
		var resp *http.Response
		if resp, err = hc.Get(h.url + "/health"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}) {
		t.Fatalf("health never answered over TLS: %v\n%s", err, h.stderr.String())
	}
}
