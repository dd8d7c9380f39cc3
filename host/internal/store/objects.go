package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// ObjectsConfig configures OpenObjects.
type ObjectsConfig struct {
	// Name is the object store's bucket. Required.
	Name string
	// Description says what it holds. Optional.
	Description string
	// Replicas is its replication factor. Optional. Default: 0, the
	// store's Replicas.
	Replicas int
}

// Objects is an object store: named blobs every host reads and watches.
// It is safe for concurrent use.
type Objects struct {
	name string
	obj  jetstream.ObjectStore
}

// ObjectInfo describes one object, or (Deleted) its deletion.
type ObjectInfo struct {
	Name    string
	Size    uint64
	Digest  string // "SHA-256=<base64url>", changes with the content
	Deleted bool
}

// OpenObjects binds the object store cfg.Name, creating it when missing
// (see ObjectStore).
func (s *Store) OpenObjects(ctx context.Context, cfg ObjectsConfig) (*Objects, error) {
	obj, err := s.ObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: cfg.Name, Description: cfg.Description, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	return &Objects{name: cfg.Name, obj: obj}, nil
}

func info(i *jetstream.ObjectInfo) ObjectInfo {
	return ObjectInfo{Name: i.Name, Size: i.Size, Digest: i.Digest, Deleted: i.Deleted}
}

func (o *Objects) fail(err error, op string) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return Fault(err, op+" in "+o.name)
}

// List returns the objects stored now (none is not an error).
func (o *Objects) List(ctx context.Context) ([]ObjectInfo, error) {
	infos, err := o.obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, o.fail(err, "list objects")
	}
	out := make([]ObjectInfo, 0, len(infos))
	for _, i := range infos {
		out = append(out, info(i))
	}
	return out, nil
}

// Info describes the object name; ErrNotFound when there is none.
func (o *Objects) Info(ctx context.Context, name string) (ObjectInfo, error) {
	i, err := o.obj.GetInfo(ctx, name)
	if err != nil {
		return ObjectInfo{}, o.fail(err, "read "+name)
	}
	return info(i), nil
}

// Get opens the object name for reading (its digest is checked when the
// reader reaches the end); ErrNotFound when there is none.
func (o *Objects) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	r, err := o.obj.Get(ctx, name)
	if err != nil {
		return nil, o.fail(err, "read "+name)
	}
	return r, nil
}

// Put stores r's content as the object name, replacing an earlier one.
func (o *Objects) Put(ctx context.Context, name, description string, r io.Reader) error {
	if _, err := o.obj.Put(ctx, jetstream.ObjectMeta{Name: name, Description: description}, r); err != nil {
		return o.fail(err, "put "+name)
	}
	return nil
}

// Delete deletes the object name (one already deleted stays so: no error;
// check with Info first to tell).
func (o *Objects) Delete(ctx context.Context, name string) error {
	if err := o.obj.Delete(ctx, name); err != nil {
		return o.fail(err, "delete "+name)
	}
	return nil
}

// ObjectWatch follows an object store. Stop it when done.
type ObjectWatch struct {
	w    jetstream.ObjectWatcher
	out  chan *ObjectInfo
	stop chan struct{}
	once sync.Once
}

// Watch reports every object stored, then a nil info (the current state
// has been replayed), then every change as it happens. The channel closes
// when the watch ends.
func (o *Objects) Watch(ctx context.Context) (*ObjectWatch, error) {
	w, err := o.obj.Watch(ctx)
	if err != nil {
		return nil, o.fail(err, "watch")
	}
	ow := &ObjectWatch{w: w, out: make(chan *ObjectInfo), stop: make(chan struct{})}
	go ow.pump()
	return ow, nil
}

func (ow *ObjectWatch) pump() {
	defer close(ow.out)
	for {
		var ev *ObjectInfo
		select {
		case <-ow.stop:
			return
		case i, ok := <-ow.w.Updates():
			if !ok {
				return
			}
			if i != nil {
				v := info(i)
				ev = &v
			}
		}
		select {
		case <-ow.stop:
			return
		case ow.out <- ev:
		}
	}
}

// Updates delivers the watch's infos (nil: the current state is in).
func (ow *ObjectWatch) Updates() <-chan *ObjectInfo { return ow.out }

// Stop ends the watch; later calls do nothing.
func (ow *ObjectWatch) Stop() {
	ow.once.Do(func() {
		close(ow.stop)
		_ = ow.w.Stop()
	})
}
