package oci

import (
	"cmp"
	"fmt"
	"net/http"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/skillhost/skillhost/host/config"
)

// Options say how a registry is reached and what a plugin may weigh.
type Options struct {
	// PlainHTTP talks to the registry over plain HTTP (a local registry).
	// Optional. Default: HTTPS.
	PlainHTTP bool
	// Username and Password authenticate to the registry; they win over the
	// docker config file. Optional. Default: the docker config file's.
	Username, Password string
	// DockerConfig is the docker config file credentials are read from
	// ("auths", "credsStore", "credHelpers"; `docker login` writes it).
	// Optional. Default: $DOCKER_CONFIG/config.json, else
	// ~/.docker/config.json; a missing file means anonymous access.
	DockerConfig string
	// MaxModuleBytes caps the module. Optional. Default: the default
	// policy's max_module_bytes.
	MaxModuleBytes int64
	// Client sends the requests. Optional. Default: one that retries
	// transient failures (oras' retry client).
	Client *http.Client
	// UserAgent is sent with every request. Optional. Default: "skillhost".
	UserAgent string
}

func (o Options) limits() limits {
	if o.MaxModuleBytes <= 0 {
		o.MaxModuleBytes = int64(config.DefaultPolicy().MaxModuleBytes)
	}
	return limits{module: o.MaxModuleBytes}
}

// ParseRef parses a reference (registry/repository[:tag|@digest], an
// oci:// prefix dropped).
func ParseRef(ref string) (registry.Reference, error) {
	r, err := registry.ParseReference(config.TrimOCIScheme(ref))
	if err != nil {
		return registry.Reference{}, fmt.Errorf("reference %.200q: %w", ref, err)
	}
	return r, nil
}

// repository is the repository of ref, reached as o says.
func (o Options) repository(ref registry.Reference) (*remote.Repository, error) {
	cred, err := o.credential(ref.Registry)
	if err != nil {
		return nil, err
	}
	hc := o.Client
	if hc == nil {
		hc = retry.DefaultClient
	}
	client := &auth.Client{Client: hc, Cache: auth.NewCache(), Credential: cred, Header: http.Header{}}
	client.SetUserAgent(cmp.Or(o.UserAgent, "skillhost"))
	return &remote.Repository{
		Client: client, Reference: ref, PlainHTTP: o.PlainHTTP,
		MaxMetadataBytes: MaxManifestBytes,
		// Plugin artifacts have no subject: no referrers index to keep.
		SkipReferrersGC: true,
	}, nil
}

// credential is the flags' credential, else the docker config file's.
func (o Options) credential(host string) (auth.CredentialFunc, error) {
	if o.Username != "" || o.Password != "" {
		return auth.StaticCredential(host, auth.Credential{Username: o.Username, Password: o.Password}), nil
	}
	var (
		store *credentials.DynamicStore
		err   error
	)
	if o.DockerConfig != "" {
		store, err = credentials.NewStore(o.DockerConfig, credentials.StoreOptions{})
	} else {
		store, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("registry credentials: %w", err)
	}
	return credentials.Credential(store), nil
}
