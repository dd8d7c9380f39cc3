package a2a_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
)

// eventLinks verifies the provenance fragment in an event's metadata
// against keys and returns its links.
func eventLinks(t *testing.T, meta map[string]any, keys *identity.KeySet) []provenance.Link {
	t.Helper()
	raw, err := json.Marshal(meta[a2a.ExtProvenance])
	if err != nil || meta[a2a.ExtProvenance] == nil {
		t.Fatalf("event without provenance: metadata %v", meta)
	}
	if rep := provenance.VerifyLinks(raw, keys); !rep.Valid {
		t.Fatalf("event links do not verify: %v", rep.Err())
	}
	var c provenance.Chain
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Links
}

// Every streamed status and artifact event carries the signed link of the
// transition or artifact it reports, and those links are the task's
// stored chain; a changed event is detected.
func TestStreamEventsCarrySignedLinks(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	h := startSigningHostOn(t, "testdata/plugins", store.Config{DataDir: t.TempDir()}, t.TempDir(), signer)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)

	var got []string
	var streamed []provenance.Link
	var id a2av1.TaskID
	var artifact *a2av1.Artifact
	for ev, err := range cl.SendStreamingMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{"n": 1.0}))) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2av1.Task:
			id = e.ID
		case *a2av1.TaskStatusUpdateEvent:
			links := eventLinks(t, e.Metadata, signer.KeySet())
			for _, l := range links {
				got = append(got, "status "+string(e.Status.State)+": "+l.Kind+" "+l.From+">"+l.To)
			}
			streamed = append(streamed, links...)
		case *a2av1.TaskArtifactUpdateEvent:
			links := eventLinks(t, e.Metadata, signer.KeySet())
			for _, l := range links {
				d, err := provenance.Digest(e.Artifact)
				if err != nil || l.Artifact.SHA256 != d || l.Artifact.ID != string(e.Artifact.ID) {
					t.Errorf("artifact link %+v does not sign the streamed artifact (%s, %v)", l.Artifact, d, err)
				}
				got = append(got, "artifact: "+l.Kind)
			}
			streamed, artifact = append(streamed, links...), e.Artifact
		}
	}
	want := []string{
		"status TASK_STATE_WORKING: transition TASK_STATE_SUBMITTED>TASK_STATE_WORKING",
		"artifact: artifact",
		"status TASK_STATE_COMPLETED: transition TASK_STATE_WORKING>TASK_STATE_COMPLETED",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("signed events (-want +got):\n%s", diff)
	}

	// The streamed links are the stored chain after its first link.
	task := taskJSON(t, h.URL, string(id))
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	var chain provenance.Chain
	if err := json.Unmarshal(task, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc.Metadata[a2a.ExtProvenance], &chain); err != nil {
		t.Fatal(err)
	}
	stored := chain.Links
	if len(stored) != len(streamed)+1 {
		t.Fatalf("stored chain has %d links, %d streamed", len(stored), len(streamed))
	}
	if diff := cmp.Diff(stored[1:], streamed); diff != "" {
		t.Errorf("streamed links differ from the stored chain (-stored +streamed):\n%s", diff)
	}

	// A changed event no longer verifies, and says which link.
	changed := slices.Clone(streamed[len(streamed)-1:])
	changed[0].To = "TASK_STATE_FAILED"
	raw, _ := json.Marshal(provenance.Chain{Links: changed})
	rep := provenance.VerifyLinks(raw, signer.KeySet())
	if rep.Valid || rep.Failure.Link != changed[0].Seq || rep.Failure.Field != "signatures" {
		t.Errorf("a changed event verifies or names the wrong link: %+v", rep.Failure)
	}
	if artifact == nil {
		t.Error("no artifact event")
	}
}
