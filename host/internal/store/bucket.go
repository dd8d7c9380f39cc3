package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// bucketSpec describes one of the store's own buckets.
type bucketSpec struct {
	name        string
	description string
	maxValue    int32
	ttl         bool // allow per-message TTL
	markers     bool // leave a delete marker when a message expires (needs ttl)
}

// ensureBucket creates the bucket or updates it to spec (so a changed
// Replicas or limit applies on the next start: an R1 bucket becomes R3) and
// binds it.
//
// The stream is written here rather than through CreateOrUpdateKeyValue for
// one setting: AllowDirect. With it on (nats.go's choice) every replica
// answers reads, so on a cluster a host can read a session another host
// created or closed a moment ago from a follower that has not applied the
// write yet. Off when Replicas > 1: reads go to the stream leader and see
// every acknowledged write. The rest mirrors nats.go's key-value stream
// layout, so the bucket is an ordinary KV bucket to every other client.
func (s *Store) ensureBucket(ctx context.Context, spec bucketSpec) (jetstream.KeyValue, error) {
	cfg := jetstream.StreamConfig{
		Name:              "KV_" + spec.name,
		Description:       spec.description,
		Subjects:          []string{"$KV." + spec.name + ".>"},
		MaxMsgsPerSubject: 1, // history 1
		MaxBytes:          s.cfg.MaxBucketBytes,
		MaxMsgSize:        spec.maxValue,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          s.replicas,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        2 * time.Minute,
		AllowDirect:       s.replicas == 1,
		Discard:           jetstream.DiscardNew,
	}
	cfg.AllowMsgTTL = spec.ttl
	if spec.markers {
		cfg.SubjectDeleteMarkerTTL = limitMarkerTTL
	}
	if _, err := s.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		if notClustered(err) {
			return nil, &permanentError{fmt.Errorf("store: store.replicas %d: the NATS server is not clustered; use 1, or 0 to choose automatically", s.replicas)}
		}
		// An existing bucket the cluster cannot raise right now (a server
		// down) keeps serving with fewer copies, said loudly.
		st, serr := s.js.Stream(ctx, cfg.Name)
		if serr != nil || st.CachedInfo().Config.Replicas >= cfg.Replicas {
			return nil, fmt.Errorf("store: bucket %s: %w", spec.name, err)
		}
		s.log.Error("store: NOT SAFE: could not raise the replicas of a bucket; losing a server that holds it can lose its data",
			"bucket", spec.name, "replicas", st.CachedInfo().Config.Replicas, "want", cfg.Replicas, "err", err)
	}
	kv, err := s.js.KeyValue(ctx, spec.name)
	if err != nil {
		return nil, fmt.Errorf("store: bind bucket %s: %w", spec.name, err)
	}
	return kv, nil
}

// ensureMaxBytes sets the stream's MaxBytes to want when it differs.
func (s *Store) ensureMaxBytes(ctx context.Context, stream string, want int64) error {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxBytes == want {
		return nil
	}
	old := cfg.MaxBytes
	cfg.MaxBytes = want
	if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
		return err
	}
	s.log.Info("store: changed the size of a bucket", "stream", stream, "from_bytes", old, "to_bytes", want)
	return nil
}
